/** The phone's core flows on Firefox ESR (puppeteer-core over WebDriver BiDi): test/helpers/phone-flows.ts. */
import { phoneCoreFlows } from '../helpers/phone-flows';

phoneCoreFlows('firefox');
