// A call's result that is also the stream of its progress: the AI SDK's preliminary tool
// results (an `execute` returning an async iterable: each value a preliminary result, the last
// the result) without changing what `await execute(...)` gives a host that calls it directly.
import type { Progress } from "../tool.js";

/** Updates kept for an iterator that has not taken them yet (the oldest are dropped). */
const KEPT = 16;

/** A preliminary result: one progress update of the running call. */
export interface PreliminaryResult {
  progress: Progress;
}

/**
 * Starts `run` with a progress listener and returns its promise, which is also an async
 * iterable: iterating it yields `{ progress }` for each update that arrives (at most 16 kept
 * while nobody takes them), then the result (or throws the call's error).
 */
export function progressive<T>(run: (onProgress: (update: Progress) => void) => Promise<T>): Promise<T> & AsyncIterable<T | PreliminaryResult> {
  const queue: Progress[] = [];
  let wake: (() => void) | undefined;
  let settled = false;
  const onProgress = (update: Progress): void => {
    if (settled) return;
    queue.push(update);
    if (queue.length > KEPT) queue.shift();
    wake?.();
  };
  const result = run(onProgress);
  const done = (): void => {
    settled = true;
    wake?.();
  };
  result.then(done, done);
  async function* updates(): AsyncGenerator<T | PreliminaryResult, void, undefined> {
    for (;;) {
      while (queue.length > 0) yield { progress: queue.shift()! };
      if (settled) break;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
    yield await result;
  }
  return Object.assign(result, { [Symbol.asyncIterator]: () => updates() });
}
