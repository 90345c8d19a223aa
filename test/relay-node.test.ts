import { relaySuite } from './helpers/relay-suite';
import { startNodeRelay } from './helpers/relay-targets';

relaySuite('node', startNodeRelay);
