/**
 * A schema built when it is first used, not when its module loads (issue 25, "Start"). zod builds each
 * schema eagerly, and a schema instance is heavy (dozens of own properties and closures): loading the
 * protocol's ~210 top-level schemas ran 46-48 ms of a start's main thread (zod itself 11-12), though a
 * start uses a handful of them (service.json's, auth's). Every top-level schema of src/protocol is
 * declared through this; the service's warm-up builds those left (buildLazySchemas).
 *
 * The value stands for the schema in the ways code here uses one (its fields, methods, `instanceof`,
 * `Object.keys`, a spread): a Proxy that builds the schema at its first touch and forwards everything to
 * it. Its identity is its own, so two uses of one declared schema compare equal, but it is not zod's
 * instance: a registry entry or map keyed by one is not found by the other, `X.optional().unwrap()` is the
 * instance, not `X`, and `Object.freeze` of it throws. Nothing in src relies on those (review22c).
 */
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  let building = false;
  const schema = (): T => {
    if (built) return built;
    // A schema whose build reads itself would otherwise recurse without end: say which instead.
    if (building) throw new Error('a lazy schema was used while it was being built (declare the cycle with z.lazy or a getter)');
    building = true;
    // Tried once, it is no longer the warm-up's to build (one that throws throws again at each use).
    unbuilt.delete(schema);
    try {
      built = build();
    } finally {
      building = false;
    }
    return built;
  };
  unbuilt.add(schema);
  const proxy = new Proxy(Object.create(null) as T, {
    get: (_target, key) => {
      const target = schema();
      return Reflect.get(target, key, target);
    },
    set: (_target, key, value) => Reflect.set(schema(), key, value),
    has: (_target, key) => Reflect.has(schema(), key),
    ownKeys: () => Reflect.ownKeys(schema()),
    getOwnPropertyDescriptor: (_target, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(schema(), key);
      // The Proxy's own target holds nothing, so it may not report a property as fixed (a Proxy invariant).
      if (descriptor) descriptor.configurable = true;
      return descriptor;
    },
    defineProperty: (_target, key, descriptor) => Reflect.defineProperty(schema(), key, descriptor),
    deleteProperty: (_target, key) => Reflect.deleteProperty(schema(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(schema()),
  });
  isBuilt.set(proxy, () => built !== undefined);
  return proxy;
}

const isBuilt = new WeakMap<object, () => boolean>();

/** The builds of the lazy schemas not tried yet, in the order they were declared. */
const unbuilt = new Set<() => unknown>();

/**
 * Builds up to `count` of the lazy schemas not tried yet (the service's warm-up after listening, a slice
 * a turn of the event loop); whether any are left.
 */
export function buildLazySchemas(count: number): boolean {
  for (const build of unbuilt) {
    if (count-- <= 0) break;
    build();
  }
  return unbuilt.size > 0;
}

/** Whether a lazySchema has been built yet (without building it); undefined for any other value. */
export function schemaBuilt(schema: object): boolean | undefined {
  return isBuilt.get(schema)?.();
}
