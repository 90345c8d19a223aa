/** The worker's message to an open page: "show this" (a tapped notification's `?conversation=...&request=...&answer=...`). */
export const OPEN_MESSAGE = 'remote-assistant.open';

export interface OpenMessage {
  type: typeof OPEN_MESSAGE;
  /** Absolute URL of the page with the deep link's query. */
  url: string;
}

export function isOpenMessage(value: unknown): value is OpenMessage {
  return value !== null && typeof value === 'object' && (value as OpenMessage).type === OPEN_MESSAGE && typeof (value as OpenMessage).url === 'string';
}
