import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { SmtpMailer } from '../../src/modules/notifications/smtp-mailer';

/*
 * DESIGN §8: `smtp://` uses STARTTLS when offered and plain SMTP otherwise; `smtps://` is implicit TLS. A relay
 * offering STARTTLS with a certificate nobody vouches for (smtp-server's defaults: its built-in certificate)
 * still gets the message, encrypted; with `smtps://` the certificate is checked.
 */
const servers: SMTPServer[] = [];

async function relay(options: { secure: boolean; hideSTARTTLS?: boolean }): Promise<{ url: string; sessions: Array<{ secure: boolean; data: string }> }> {
  const sessions: Array<{ secure: boolean; data: string }> = [];
  const server = new SMTPServer({
    ...options,
    authOptional: true,
    logger: false,
    onData(stream, session: SMTPServerSession, done) {
      let data = '';
      stream.on('data', (c: Buffer) => (data += c.toString()));
      stream.on('end', () => {
        sessions.push({ secure: session.secure, data });
        done();
      });
    },
  });
  // A client that refuses the certificate closes mid-handshake: the server reports it, nothing to do here.
  server.on('error', () => undefined);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.server.address() as AddressInfo;
  return { url: `${options.secure ? 'smtps' : 'smtp'}://127.0.0.1:${port}`, sessions };
}

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
});

async function sendVia(url: string, to = 'payer@example.test') {
  const mailer = new SmtpMailer(url, 'receipts@example.test', 5000);
  const composed = await mailer.compose({ to, subject: 'Receipt', text: 'paid', html: '<p>paid</p>', messageId: '<m1@example.test>' });
  return mailer.send(composed, new AbortController().signal);
}

it('smtp:// to a relay offering STARTTLS with its own certificate: sent, over TLS', async () => {
  const r = await relay({ secure: false });
  expect(await sendVia(r.url)).toMatchObject({ kind: 'sent' });
  expect(r.sessions).toEqual([expect.objectContaining({ secure: true, data: expect.stringContaining('Subject: Receipt') })]);
});

it('smtp:// to a relay offering no STARTTLS: sent in plain', async () => {
  const r = await relay({ secure: false, hideSTARTTLS: true });
  expect(await sendVia(r.url)).toMatchObject({ kind: 'sent' });
  expect(r.sessions).toEqual([expect.objectContaining({ secure: false })]);
});

it('smtps:// checks the certificate: one nobody vouches for is refused before anything is sent, and tried again', async () => {
  const r = await relay({ secure: true });
  expect(await sendVia(r.url)).toMatchObject({ kind: 'transient' });
  expect(r.sessions).toEqual([]);
});
