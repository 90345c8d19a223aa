import { formatBytes } from './text-files';

export const DEFAULT_OUTPUT_CAP_BYTES = 64 * 1024;

/** Bytes at the end of `buffer` that start a UTF-8 character it does not finish. */
function incompleteTail(buffer: Buffer): number {
  for (let back = 1; back <= Math.min(3, buffer.length); back++) {
    const byte = buffer[buffer.length - back];
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/** Continuation bytes at the start of `buffer` (the rest of a character cut off before it). */
function orphanHead(buffer: Buffer): number {
  let n = 0;
  while (n < Math.min(3, buffer.length) && (buffer[n] & 0xc0) === 0x80) n++;
  return n;
}

/**
 * A process's output, kept within a cap: the first half and the last half of the cap, since the start
 * (what ran) and the end (the error, the summary) matter most; the middle is dropped and counted.
 */
export class CappedOutput {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(cap = DEFAULT_OUTPUT_CAP_BYTES) {
    this.headLimit = Math.ceil(cap / 2);
    this.tailLimit = Math.floor(cap / 2);
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(chunk.length, this.headLimit - this.headBytes);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tailBytes - this.tail[0].length >= this.tailLimit) this.tailBytes -= this.tail.shift()!.length;
  }

  get totalBytes(): number {
    return this.total;
  }

  text(): string {
    const head = Buffer.concat(this.head);
    let tail = Buffer.concat(this.tail);
    if (tail.length > this.tailLimit) tail = tail.subarray(tail.length - this.tailLimit);
    const cut = this.total - head.length - tail.length;
    if (cut === 0) return Buffer.concat([head, tail]).toString('utf8');
    const headText = head.subarray(0, head.length - incompleteTail(head)).toString('utf8');
    const tailText = tail.subarray(orphanHead(tail)).toString('utf8');
    return `${headText}\n[... ${formatBytes(cut)} of output cut (${formatBytes(this.total)} in all) ...]\n${tailText}`;
  }
}
