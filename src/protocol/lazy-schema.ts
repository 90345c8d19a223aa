/**
 * A schema built when it is first used, not when its module loads (issue 25, "Start"). zod builds each
 * schema eagerly, and a schema instance is heavy (dozens of own properties and closures): the protocol's
 * ~300 schemas cost a start ~35 ms of its main thread before anything listened, though a start uses a
 * handful of them (service.json's, auth's). Every schema of src/protocol is declared through this.
 *
 * The value stands for the schema in every way code can observe (its fields, methods, `instanceof`,
 * `Object.keys`): a Proxy that builds the schema at its first touch and forwards everything to it. Its
 * identity is its own, so two uses of one declared schema still compare equal; the built schema itself
 * never escapes through this value (only what its methods return).
 */
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  let building = false;
  const schema = (): T => {
    if (built) return built;
    // A schema whose build reads itself would otherwise recurse without end: say which instead.
    if (building) throw new Error('a lazy schema was used while it was being built (declare the cycle with z.lazy or a getter)');
    building = true;
    try {
      built = build();
    } finally {
      building = false;
    }
    return built;
  };
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

/** Whether a lazySchema has been built yet (without building it); undefined for any other value. */
export function schemaBuilt(schema: object): boolean | undefined {
  return isBuilt.get(schema)?.();
}
