import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';

/**
 * A test-only CPU profile of the extension host's main thread while "Measure Responsiveness" runs: only
 * when the process was started with RA_E2E_CPU_PROFILE=<file> (the e2e's code-server environment), never
 * from anything a client or the network can set. V8's sampling profiler through an in-process inspector
 * session (no port is opened); the .cpuprofile is written at stop. Beside it, V8's heap sampler (every
 * allocation of the thread's heap, one sample per 8 KB on average, those collected since kept): where the
 * garbage the GC pauses collect was made, written as `<file>.heapprofile`. Without the variable it is
 * never loaded.
 */
export class CpuProfile {
  private constructor(
    private readonly session: Session,
    private readonly file: string,
  ) {}

  /** Starts sampling every `intervalUs` (default 250 us), or returns undefined when not asked for. */
  static async start(env: NodeJS.ProcessEnv = process.env, intervalUs = 250): Promise<CpuProfile | undefined> {
    const file = env.RA_E2E_CPU_PROFILE;
    if (!file) return undefined;
    const session = new Session();
    session.connect();
    const post = (method: string, params?: object) => new Promise<unknown>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: intervalUs });
    await post('Profiler.start');
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    return new CpuProfile(session, file);
  }

  /** Stops sampling and writes both profiles (the heap's as `<file>.heapprofile`); returns the CPU profile's file. */
  async stop(): Promise<string> {
    const profile = await new Promise<unknown>((resolve, reject) => this.session.post('Profiler.stop', (error, result) => (error ? reject(error) : resolve(result.profile))));
    const heap = await new Promise<unknown>((resolve, reject) => this.session.post('HeapProfiler.stopSampling', (error, result) => (error ? reject(error) : resolve(result.profile))));
    this.session.disconnect();
    await writeFile(this.file, JSON.stringify(profile));
    await writeFile(`${this.file}.heapprofile`, JSON.stringify(heap));
    return this.file;
  }
}
