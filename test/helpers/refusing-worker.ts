// A history worker that refuses one put as a full disk would (the worker's write fails, the store keeps
// the bodies owed): shared by the in-process tests (test/store/history-in-flight.test.ts) and the store
// child killed -9 with a body owed (test/helpers/store-child.ts).
import type { Worker } from 'node:worker_threads';

/**
 * Makes `worker` refuse the first put carrying a body that starts with `marked` (a row SQLite cannot bind
 * joins it). `slow`: that put reaches the worker only with the next request, as from a worker slow to
 * refuse (a full disk met at commit). Returns what undoes it.
 */
export function refuseFirstPut(worker: Worker, marked: string, slow: boolean): () => void {
  const post = worker.postMessage.bind(worker);
  let refuse = true;
  let held: any = null;
  worker.postMessage = (m: any, transfer?: never) => {
    if (refuse && m?.request?.op === 'put' && m.request.bodies.some((b: any) => String(b.content).startsWith(marked))) {
      refuse = false;
      m = structuredClone(m);
      m.request.bodies.unshift({ key: 2 ** 40, conversation_id: 'c', role: 'user', content: { not: 'bindable' }, data: null });
      if (slow) {
        held = m;
        return;
      }
    } else if (held) {
      post(held);
      held = null;
    }
    post(m, transfer);
  };
  return () => {
    worker.postMessage = post;
  };
}
