/** The phone's core flows on Chromium (playwright-core): test/helpers/phone-flows.ts. */
import { phoneCoreFlows } from '../helpers/phone-flows';

phoneCoreFlows('chromium');
