/**
 * media/qr-decode.js: the QR decoder for browsers without BarcodeDetector (desktop Chromium on Linux,
 * Safari, Firefox), loaded by the page only when the user adds a computer from a picture of its QR code
 * (machines/qr-reader.ts), so the page's own bundle stays small. jsQR: pure JavaScript, Apache-2.0, no
 * dependencies, about 46 KB gzipped.
 */
import jsQR from 'jsqr';

(globalThis as { remoteAssistantQr?: (image: ImageData) => string | undefined }).remoteAssistantQr = (image) =>
  jsQR(image.data, image.width, image.height, { inversionAttempts: 'attemptBoth' })?.data || undefined;
