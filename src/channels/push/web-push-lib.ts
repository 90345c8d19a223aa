/**
 * web-push, required on first use (a VAPID key made, a push sent) rather than at start: with its
 * bn.js/asn1.js it is a good part of a start's parsing, and the build keeps it in a file of its own
 * (esbuild.mjs) that a start does not read.
 */
export function webPush(): typeof import('web-push') {
  return require('web-push') as typeof import('web-push');
}
