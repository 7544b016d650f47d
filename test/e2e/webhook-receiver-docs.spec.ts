import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { transformSync } from '@swc/core';
import { Wallet } from 'ethers';
import express from 'express';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import * as sdk from '../../sdk/webhook-verify/src/index';
import { admin, createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * The Express receivers the partner docs show (docs/webhooks.md, README.md, sdk/webhook-verify/README.md),
 * run as written against a real service, a real live-mode payment on the local chain and the SDK: the code
 * block is taken from the file and compiled; only what the docs leave to the partner (their database: the
 * ids seen, the orders paid) is given here. The partner's database fails once while marking the order paid,
 * as databases do: the delivery must still end with the order paid. Until 2026-11-28 the examples recorded
 * the delivery_id before acting on the event, outside any transaction, so the retry that followed the 500
 * found the id seen, answered 204 and the order stayed unpaid for good.
 */
const ROOT = join(__dirname, '..', '..');
const DOCS = ['docs/webhooks.md', 'README.md', 'sdk/webhook-verify/README.md'];

let svc: TestService;
const servers: Server[] = [];

beforeAll(async () => {
  svc = await startService({
    worker: true,
    env: { VERIFY_POLL_MS: '200', WEBHOOK_RETRY_DELAYS_MS: '200,400', WEBHOOK_MAX_ATTEMPTS: '4' },
  });
  const env = testEnv();
  await mint(env.rpcUrl, env.token, new Wallet(DEV_KEYS[1]).address, 10n ** 15n);
}, 60000);

afterAll(async () => {
  await svc?.close();
  for (const s of servers) s.close();
});

/** The first TypeScript block of a doc that defines the receiver. */
function receiverExample(doc: string): string {
  const blocks = [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.includes("app.post('/webhooks/prs'") && b.includes('verifyWebhook('));
  if (!block) throw new Error(`${doc}: no receiver example`);
  return block;
}

/** The partner's own database, which the examples leave to the reader: seen delivery ids and paid orders. */
class PartnerDb {
  readonly seen = new Set<string>();
  readonly paid = new Map<string, string | null>();
  /** Attempts to mark an order paid; the first fails, as a database blip would. */
  markAttempts = 0;

  private async markPaid(paid: Map<string, string | null>, requestId: string, txHash: string | null): Promise<void> {
    if (++this.markAttempts === 1) throw new Error('database connection lost');
    paid.set(requestId, txHash);
  }

  /** Every name the examples use for it, in both of the shapes they have had. */
  globals(): Record<string, unknown> {
    type Mark = (r: string, t: string | null) => Promise<void>;
    const direct: Mark = (r, t) => this.markPaid(this.paid, r, t);
    // README's handler: handle(event) on its own, or handle(tx, event) inside the transaction.
    const handle = async (...args: [sdk.WebhookEvent] | [{ markOrderPaid: Mark }, sdk.WebhookEvent]) => {
      const [mark, event] = args.length === 1 ? [direct, args[0]] : [args[0].markOrderPaid, args[1]];
      if (event.event === 'payment.proof_verified') await mark(event.request_id, event.tx_hash);
    };
    return {
      seenDeliveries: { insertIfAbsent: async (id: string) => !this.seen.has(id) && !!this.seen.add(id) },
      markOrderPaid: direct,
      handle,
      db: {
        // Commits the ids and orders of fn only when fn resolves, as a database transaction does.
        transaction: async <T>(fn: (tx: unknown) => Promise<T>): Promise<T> => {
          const seen = new Set<string>();
          const paid = new Map<string, string | null>();
          const mark = (r: string, t: string | null) => this.markPaid(paid, r, t);
          const tx = {
            recordDelivery: async (id: string) => !this.seen.has(id) && !seen.has(id) && !!seen.add(id),
            markOrderPaid: mark,
          };
          const result = await fn(tx);
          for (const id of seen) this.seen.add(id);
          for (const [r, t] of paid) this.paid.set(r, t);
          return result;
        },
      },
    };
  }
}

/** Compiles the doc's example and starts its app, with the secret in PRS_WEBHOOK_SECRET as the docs say. */
async function startExample(doc: string, secret: string, partnerDb: PartnerDb, clockSkewSeconds = 0): Promise<string> {
  const { code } = transformSync(receiverExample(doc), {
    filename: 'example.ts',
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  // With a skew, the receiver's clock is off by clockSkewSeconds on the first attempt of each delivery (the
  // partner then fixes it): the SDK sees a t too far from its now.
  const skewed = new Set<string>();
  const verifyWebhook: typeof sdk.verifyWebhook = (raw, header, secrets, options) => {
    const id = (JSON.parse(Buffer.from(raw as Buffer).toString('utf8')) as { delivery_id: string }).delivery_id;
    const skew = clockSkewSeconds && !skewed.has(id) && !!skewed.add(id);
    const now = skew ? Math.floor(Date.now() / 1000) + clockSkewSeconds : options?.now;
    return sdk.verifyWebhook(raw, header, secrets, { ...options, now });
  };
  const modules: Record<string, unknown> = {
    express,
    '@prs/webhook-verify': clockSkewSeconds ? { ...sdk, verifyWebhook } : sdk,
  };
  const requireModule = (name: string) => {
    if (!(name in modules)) throw new Error(`${doc}: the example imports ${name}`);
    return modules[name];
  };
  const globals = { process: { env: { PRS_WEBHOOK_SECRET: secret } }, ...partnerDb.globals() };
  const run = new Function('require', 'exports', ...Object.keys(globals), `${code}\nreturn app;`);
  const app = run(requireModule, {}, ...Object.values(globals)) as express.Express;
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/prs`;
}

async function deliveriesOf(requestId: string): Promise<Array<{ event: string; state: string; attempts: number }>> {
  return (await admin(svc, 'GET', `/deliveries?request_id=${requestId}`)).body.deliveries;
}

type Delivery = Awaited<ReturnType<typeof deliveriesOf>>[number];

/** A live payment to a merchant of a new partner whose webhook is the doc's example; its settled deliveries. */
async function payThroughExample(
  doc: string,
  partnerDb: PartnerDb,
  fiat: number,
  clockSkewSeconds = 0,
): Promise<{ settled: Delivery[]; requestId: string; txHash: string }> {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.liveKey);
  const put = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'http://127.0.0.1:9/unused', enabled: false });
  const url = await startExample(doc, put.body.secret, partnerDb, clockSkewSeconds);
  expect((await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url, enabled: true })).status).toBe(200);

  const req = await mustCreateRequest(svc, p.liveKey, { account_id: m.id, fiat_amount_int: fiat });
  const env = testEnv();
  const tx = await transferToken(env.rpcUrl, env.token, DEV_KEYS[1], m.wallet.address, BigInt(req.amount));
  expect((await call(svc.publicUrl, 'POST', `/pay/api/${req.request_id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);

  const settled = (await waitFor(async () => {
    const ds = await deliveriesOf(req.request_id);
    return ds.length === 2 && ds.every((d) => d.state === 'delivered' || d.state === 'abandoned') && ds;
  }, 30000)) as Delivery[];
  return { settled, requestId: req.request_id, txHash: tx.txHash };
}

it.each(DOCS)('%s: a live payment ends with the order paid, though marking it failed once', async (doc) => {
  const partnerDb = new PartnerDb();
  const { settled, requestId, txHash } = await payThroughExample(doc, partnerDb, 1500 + DOCS.indexOf(doc));
  const verified = settled.find((d) => d.event === 'payment.proof_verified')!;
  // The first attempt answered 500 (the blip), the second acted on the event.
  expect(verified).toMatchObject({ state: 'delivered', attempts: 2 });
  expect(partnerDb.markAttempts).toBe(2);
  expect(partnerDb.paid.get(requestId)).toBe(txHash);
  expect(settled.find((d) => d.event === 'payment.proof_attached')).toMatchObject({ state: 'delivered', attempts: 1 });
});

/*
 * A receiver whose clock is off by more than the tolerance gets timestamp_out_of_tolerance from the SDK. The
 * service signs every attempt with a fresh t, so a later attempt verifies once the clock is right: the examples
 * must answer a status the service retries (spec §6.5: 5xx), not a 4xx, which abandons the delivery. Until
 * 2026-11-28 they answered 400 and the payment's events were dropped.
 */
it.each(DOCS)('%s: a stale timestamp (receiver clock off) is retried, not abandoned', async (doc) => {
  const partnerDb = new PartnerDb();
  partnerDb.markAttempts = 1; // no database blip here: only the clock
  const { settled, requestId, txHash } = await payThroughExample(doc, partnerDb, 1600 + DOCS.indexOf(doc), 400);
  for (const event of ['payment.proof_attached', 'payment.proof_verified']) {
    expect(settled.find((d) => d.event === event)).toMatchObject({ state: 'delivered', attempts: 2 });
  }
  expect(partnerDb.paid.get(requestId)).toBe(txHash);
});
