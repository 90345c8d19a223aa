/**
 * A frame's JSON text, made once per frame object: an event sent to many clients (a conversation's
 * followers get the same object) is serialized once, not once per socket. Frames are never changed
 * after they are sent, so the text stays true.
 */
const texts = new WeakMap<object, string>();

export function wireText(frame: object): string {
  let text = texts.get(frame);
  if (text === undefined) {
    text = JSON.stringify(frame);
    texts.set(frame, text);
  }
  return text;
}
