// A bundle compiled with V8's code cache: the command line's (cli-loader.ts, its cache written by the build)
// and the editor's service thread (service-thread/thread-loader.ts, its cache written beside its bundle at
// its first warm start). Compiling a 1.8 MB bundle without its cache was the largest single CPU cost of a start.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

/**
 * The cache starts with the bundle's size and modification time when it was made: V8 checks only the
 * source's length (and its own version and flags), so a bundle rebuilt without its cache (`npm run
 * watch`, an extension updated in place) must not get the old one.
 */
const HEADER_BYTES = 16;

export class CodeCache {
  constructor(
    /** The bundle, built as a function of a CommonJS module's arguments (esbuild.mjs's banner and footer). */
    readonly bundle: string,
    readonly file: string,
  ) {}

  stamp(): Buffer {
    const stat = statSync(this.bundle);
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeDoubleLE(stat.size, 0);
    header.writeDoubleLE(stat.mtimeMs, 8);
    return header;
  }

  /** The bundle's cached code when it was made from this very bundle; undefined otherwise. */
  read(): Buffer | undefined {
    try {
      const cache = readFileSync(this.file);
      return cache.subarray(0, HEADER_BYTES).equals(this.stamp()) ? cache.subarray(HEADER_BYTES) : undefined;
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
    writeFileSync(partial, Buffer.concat([stamp, script.createCachedData()]), { mode: 0o600 });
    renameSync(partial, this.file);
  }
}
