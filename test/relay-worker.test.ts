import { relaySuite } from './helpers/relay-suite';
import { startWorkerRelay } from './helpers/relay-targets';

relaySuite('worker', startWorkerRelay);
