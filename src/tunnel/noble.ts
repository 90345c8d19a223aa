/**
 * @noble's curve, hashes and cipher (noble-modules.ts), loaded at their first use rather than with the
 * bundle that holds them: ed25519.js builds its curves at its top level, about 6-9 ms of the service
 * thread's load (issue 25, "editor activation"), though nothing before the service listens needs them (a
 * pairing, the relay link and the machine's key pair come later). esbuild bundles the `require` as a lazy
 * start of the very modules a static import would have given (one instance). The page's builds take them
 * statically instead (esbuild.mjs's `noble-static`): there the wrappers only cost bytes.
 */
declare const require: (id: string) => unknown;

type NobleModules = typeof import('./noble-modules');
let modules: NobleModules | undefined;

/** Kept once loaded: the bundled `require` makes a new module object at every call, and the tunnel calls this for every frame it seals or opens (review28a: +8 us a frame). */
export const noble = (): NobleModules => (modules ??= require('./noble-modules') as NobleModules);
