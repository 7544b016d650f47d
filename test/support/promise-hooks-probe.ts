import { executionAsyncId } from 'node:async_hooks';

/**
 * Preloaded into a service started by a test (`-r`): answers the IPC message 'promise-hooks?' with whether
 * the process's promise hooks are on. With them on (an AsyncLocalStorage entered once does it for the whole
 * process on Node 20), each continuation of an `await` runs under an async id of its own; with them off,
 * continuations run under their caller's. (Jest's own runner enters one, so this cannot be seen in-process.)
 */
async function promiseHooksOn(): Promise<boolean> {
  const ids: number[] = [];
  for (let i = 0; i < 3; i++) {
    await null;
    ids.push(executionAsyncId());
  }
  return new Set(ids).size > 1;
}

process.on('message', (m) => {
  if (m === 'promise-hooks?') void promiseHooksOn().then((on) => process.send?.({ promiseHooks: on }));
});
