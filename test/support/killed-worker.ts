import type { ChildProcess } from 'node:child_process';
import { start, type Running } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { verifiedReceipt } from '../factories/notifications';
import { testEnvVars, type TestService } from './app';
import { testEnv } from './test-env';
import { spawnWorker } from './worker-process';

/**
 * What the specs that SIGKILL a notifications worker share: the environment the API side and both workers
 * run with (the file's own queues, short timeouts), the worker process and its exit, the receipt it is
 * killed over, and the worker (in the test's process) that takes over.
 */
export function killedWorkerEnv(smtpUrl: string, sendTimeoutMs: number, prefix: string): Record<string, string> {
  return testEnvVars({
    SMTP_URL: smtpUrl,
    MAIL_FROM: 'receipts@mail.example.test',
    NOTIFY_SEND_TIMEOUT_MS: String(sendTimeoutMs),
    NOTIFY_REDRIVE_MS: '500',
    NOTIFY_RETRY_BASE_MS: '100',
    REDIS_PREFIX: `${testEnv().redisPrefix}-${prefix}`,
  });
}

/** A worker process and the signal that ended it (resolves on exit). */
export async function killableWorker(env: Record<string, string>): Promise<{ worker: ChildProcess; exited: Promise<NodeJS.Signals | null> }> {
  const worker = await spawnWorker(env);
  const exited = new Promise<NodeJS.Signals | null>((resolve) => worker.once('exit', (_code, signal) => resolve(signal)));
  return { worker, exited };
}

/** A verified request's receipt to `customer`, written and relayed: the running worker takes it. */
export async function relayedReceipt(svc: TestService, customer: string): Promise<{ id: string; requestId: string }> {
  const receipt = await verifiedReceipt(svc, customer);
  await svc.app.get(NotificationRelay).enqueue([receipt.id]);
  return receipt;
}

/** The worker that takes over from the killed one, in this process. */
export function takeOver(env: Record<string, string>): Promise<Running> {
  return start(loadConfig(env), { http: false, worker: true }, { logger: false });
}
