const PREFIX = 'webhook:';

/** `webhook:<account>`: the conversations' source and owner (commands/session.ts ownerOf). */
export function webhookSource(account: string): string {
  return `${PREFIX}${account}`;
}

