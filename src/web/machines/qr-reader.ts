/**
 * Reads the text of the QR code in a picture: a photo the phone's camera took (`<input type=file
 * capture>`, which works on a plain-http LAN page where the camera stream does not), or a frame of the
 * live camera where the page may have one. The browser's BarcodeDetector where it has one; else jsQR,
 * loaded from media/qr-decode.js the first time it is needed.
 */

import { drawScaled } from '../chat/attachment-images';

type Decode = (image: ImageData) => string | undefined;

interface Detector {
  detect(source: ImageBitmapSource): Promise<{ rawValue: string }[]>;
}
interface DetectorClass {
  new (options: { formats: string[] }): Detector;
  getSupportedFormats(): Promise<string[]>;
}

/** Big enough for a QR code that fills a fair part of a photo; a 12-megapixel photo is scaled down first. */
const MAX_SIDE = 1200;

let detector: Promise<Detector | undefined> | undefined;
let decoder: Promise<Decode> | undefined;

/** The QR code's text, or undefined when the picture holds none that could be read. */
export async function readQr(source: ImageBitmapSource): Promise<string | undefined> {
  const native = await nativeDetector();
  if (native) {
    const found = await native.detect(source).catch(() => []);
    if (found[0]?.rawValue) return found[0].rawValue;
  }
  const image = await pixelsOf(source);
  return image ? (await loadDecoder())(image) : undefined;
}

function nativeDetector(): Promise<Detector | undefined> {
  detector ??= (async () => {
    const Class = (globalThis as { BarcodeDetector?: DetectorClass }).BarcodeDetector;
    if (!Class) return undefined;
    const formats = await Class.getSupportedFormats().catch(() => [] as string[]);
    return formats.includes('qr_code') ? new Class({ formats: ['qr_code'] }) : undefined;
  })();
  return detector;
}

async function pixelsOf(source: ImageBitmapSource): Promise<ImageData | undefined> {
  const bitmap = await createImageBitmap(source).catch(() => undefined);
  if (!bitmap) return undefined;
  const drawn = drawScaled(bitmap, MAX_SIDE, { willReadFrequently: true });
  bitmap.close();
  return drawn?.context.getImageData(0, 0, drawn.width, drawn.height);
}

function loadDecoder(): Promise<Decode> {
  decoder ??= new Promise<Decode>((resolve, reject) => {
    const script = document.createElement('script');
    // Beside the page's own script, wherever the page is served from (the service, a relay).
    script.src = 'qr-decode.js';
    script.onload = () => {
      const decode = (globalThis as { remoteAssistantQr?: Decode }).remoteAssistantQr;
      if (decode) resolve(decode);
      else reject(new Error('the QR decoder did not load'));
    };
    script.onerror = () => reject(new Error('the QR decoder could not be loaded'));
    document.head.append(script);
  }).catch((error: unknown) => {
    decoder = undefined; // Try again next time (the network may be back).
    throw error;
  });
  return decoder;
}
