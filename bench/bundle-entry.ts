// The benches' bundle (dist/bench-service.js, opened by bench/bundled.ts): the service, and what a bench
// reads of the same module instances. `derivationLoad` is the password checks running and waiting in the
// bundled service's own passwords module; the one a bench imports from src is another instance, which the
// bundled service never uses (it read 0 running, 0 waiting from s20's bundle on).
export * from '../src/service';
export { derivationLoad } from '../src/transport/auth/passwords';
