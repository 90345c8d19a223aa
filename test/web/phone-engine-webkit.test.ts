/** The phone's core flows on WebKitGTK, the engine of Safari (WebKitWebDriver under Xvfb): test/helpers/phone-flows.ts. */
import { phoneCoreFlows } from '../helpers/phone-flows';

phoneCoreFlows('webkit');
