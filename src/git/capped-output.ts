/**
 * A git's output as it arrives, in its chunks, up to a cap (run-git.ts). Nothing is joined until asked,
 * and a cut output is searched from its end a window at a time and only the part kept is joined and decoded:
 * joining the 64 MiB of a cut diff alone held the service's loop 200-250 ms on a loaded machine, and
 * searching it once decoded most of a second (docs/design.md, "Git's cost").
 */
/** How much of a cut output is searched at a time (one buffer, reused). */
const SEARCH_WINDOW_BYTES = 1024 * 1024;

export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  /** More arrived than the cap: what is held is cut there. */
  overflowed = false;

  constructor(private readonly cap: number) {}

  /** Takes a chunk; false once the cap is passed (what is past it is dropped). */
  add(chunk: Buffer): boolean {
    if (this.overflowed) return false;
    const room = this.cap - this.bytes;
    if (chunk.length > room) {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.bytes = this.cap;
      this.overflowed = true;
      return false;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    return true;
  }

  /** Everything held, decoded (`latin1`: one character a byte, for output that holds file contents of known byte sizes). */
  text(encoding: 'utf8' | 'latin1' = 'utf8'): string {
    return this.textUpTo(this.bytes, encoding);
  }

  /** What is held up to and with the `\n` before the last `\n` + `marker` ('' when there is none). */
  textBefore(marker: string): string {
    return this.textUpTo(this.lastIndexOf(`\n${marker}`) + 1);
  }

  private textUpTo(end: number, encoding: 'utf8' | 'latin1' = 'utf8'): string {
    if (end <= 0) return '';
    const kept: Buffer[] = [];
    let at = 0;
    for (const chunk of this.chunks) {
      if (at >= end) break;
      kept.push(at + chunk.length <= end ? chunk : chunk.subarray(0, end - at));
      at += chunk.length;
    }
    return Buffer.concat(kept).toString(encoding);
  }

  /**
   * The last place `needle` starts in what is held, or -1: searched from the end a window at a time (the
   * windows overlap by the needle's length, so one found across chunks, however small, is found), each
   * copied into one reused buffer rather than the whole output joined.
   */
  private lastIndexOf(needle: string): number {
    const bytes = Buffer.from(needle);
    const window = Buffer.allocUnsafe(Math.min(this.bytes, SEARCH_WINDOW_BYTES));
    let end = this.bytes;
    while (end >= bytes.length) {
      const start = Math.max(0, end - window.length);
      const at = window.subarray(0, this.copyInto(window, start, end)).lastIndexOf(bytes);
      if (at !== -1) return start + at;
      if (start === 0) break;
      end = start + bytes.length - 1;
    }
    return -1;
  }

  /** Copies the held bytes from `from` to `to` into `target`; answers how many. */
  private copyInto(target: Buffer, from: number, to: number): number {
    let at = 0;
    let written = 0;
    for (const chunk of this.chunks) {
      const next = at + chunk.length;
      if (next > from && at < to) written += chunk.copy(target, written, Math.max(0, from - at), Math.min(chunk.length, to - at));
      at = next;
      if (at >= to) break;
    }
    return written;
  }
}
