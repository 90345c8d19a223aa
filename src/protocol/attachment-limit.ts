/** The largest file one may attach (docs/protocol.md, "Attachments"); re-exported by attachments.ts. */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;
