// A bundle compiled with V8's code cache: the command line's (cli-loader.ts, its cache written by the build)
// and the editor's service thread (service-thread/thread-loader.ts, its cache written beside its bundle at
// its first warm start). Compiling a 1.8 MB bundle without its cache was the largest single CPU cost of a start.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import { crc32 } from 'node:zlib';

/**
 * The cache starts with the bundle's size and modification time when it was made: V8 checks only the
 * source's length (and its own version and flags), so a bundle rebuilt without its cache (`npm run
 * watch`, an extension updated in place) must not get the old one. Then the CRC-32 of V8's data: V8's
 * release builds do not check that data, and a cache damaged in place (a bad disk, bytes flipped with its
 * length kept) crashed the whole process at every start until it was deleted (review28b). About 0.25 ms
 * for the command line's 1.35 MB.
 */
const STAMP_BYTES = 16;
const HEADER_BYTES = STAMP_BYTES + 4;

export class CodeCache {
  constructor(
    /** The bundle, built as a function of a CommonJS module's arguments (esbuild.mjs's banner and footer). */
    readonly bundle: string,
    readonly file: string,
  ) {}

  stamp(): Buffer {
    const stat = statSync(this.bundle);
    const header = Buffer.alloc(STAMP_BYTES);
    header.writeDoubleLE(stat.size, 0);
    header.writeDoubleLE(stat.mtimeMs, 8);
    return header;
  }

  /** The bundle's cached code when it was made from this very bundle and is whole; undefined otherwise. */
  read(): Buffer | undefined {
    try {
      const cache = readFileSync(this.file);
      if (cache.length <= HEADER_BYTES || !cache.subarray(0, STAMP_BYTES).equals(this.stamp())) return undefined;
      const data = cache.subarray(HEADER_BYTES);
      return crc32(data) === cache.readUInt32LE(STAMP_BYTES) ? data : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The bundle's text, compiled as it is in the file (a wrapper joined here made V8 copy the 2 MB into one
   * string before compiling), read as UTF-8: the build writes it in ASCII, which V8 keeps one byte a character.
   */
  compile(cachedData: Buffer | undefined): vm.Script {
    return new vm.Script(readFileSync(this.bundle, 'utf8'), { filename: this.bundle, cachedData });
  }

  /** Runs the compiled bundle as a CommonJS module; its exports. */
  run<T>(script: vm.Script): T {
    const module = { exports: {} as T };
    (script.runInThisContext() as (...args: unknown[]) => void).call(module.exports, module.exports, createRequire(this.bundle), module, this.bundle, path.dirname(this.bundle));
    return module.exports;
  }

  /** Writes what `script` has compiled so far, stamped with `stamp` (taken when the bundle was read); atomic. */
  write(script: vm.Script, stamp: Buffer): void {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const partial = `${this.file}.${process.pid}.partial`;
    const data = script.createCachedData();
    const check = Buffer.alloc(4);
    check.writeUInt32LE(crc32(data));
    writeFileSync(partial, Buffer.concat([stamp, check, data]), { mode: 0o600 });
    renameSync(partial, this.file);
  }
}
