import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A self-signed certificate for `host` (and 127.0.0.1) made by `openssl` in `dir`, a day long: for an
 * HTTPS server on 127.0.0.1 in a test. `cert` is also the certificate to trust.
 */
export function selfSignedCertificate(dir: string, host = '127.0.0.1'): { key: Buffer; cert: Buffer; certFile: string } {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  const names = host === '127.0.0.1' ? 'IP:127.0.0.1' : `DNS:${host},IP:127.0.0.1`;
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      `/CN=${host}`,
      '-addext',
      `subjectAltName=${names}`,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile), cert: readFileSync(certFile), certFile };
}
