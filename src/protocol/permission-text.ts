/**
 * A permission decision as people read it: the one wording of every prompt's outcome (the phone's and
 * the webview's cards, the "Needs you" list, a notification's answer) and of the service's own messages
 * about it. No imports: the web page bundles it too.
 */
const DECISION_TEXT: Record<string, string> = {
  allow: 'Allowed',
  allow_conversation: 'Allowed for this conversation',
  // An older service says the old name (docs/protocol.md, "Permission requests").
  allow_session: 'Allowed for this conversation',
  allow_always: 'Always allowed',
  deny: 'Denied',
};

/** `Allowed`, `Allowed for this conversation`, `Always allowed`, `Denied`; an unknown decision as it is. */
export function decisionText(decision: string): string {
  return DECISION_TEXT[decision] ?? decision;
}
