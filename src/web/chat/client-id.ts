/** A new random id made by the page (a message's client_message_id, a new chat's draft, a kept file's key). */
export function newClientId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
