/** Polls until check() returns a truthy value, or fails after timeoutMs with the last value seen. */
export async function waitFor<T>(check: () => Promise<T>, timeoutMs = 15000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await check();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`waitFor timed out; last value: ${JSON.stringify(last)}`);
    await sleep(everyMs);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
