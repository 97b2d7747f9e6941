/**
 * Node 20 has no `Promise.withResolvers` (Node 22 does), and the Restate SDK calls it on every invocation. This
 * adds the standard one where it is missing, and nothing else; delete the module when Node 20 is dropped.
 */
const promise = Promise as PromiseConstructor & { withResolvers?: unknown };
if (typeof promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>(this: PromiseConstructor) {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new this<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}
