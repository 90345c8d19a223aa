/**
 * A photo made ready to send: turned upright by its EXIF orientation, scaled so its longest side is at
 * most 2048 pixels, and encoded again as JPEG (quality 0.85). Re-encoding through a canvas also drops
 * every metadata block (EXIF, GPS position, camera serial): nothing but pixels leaves the phone.
 */
export const MAX_IMAGE_SIDE = 2048;
const JPEG_QUALITY = 0.85;

/** Photos and pictures worth re-encoding; GIFs (animation) and SVGs (not pixels) are sent as they are. */
export function isPhoto(file: Blob): boolean {
  return /^image\/(jpeg|png|webp|heic|heif|avif|bmp)$/i.test(file.type);
}

export interface PreparedImage {
  bytes: Uint8Array;
  mime: 'image/jpeg';
  width: number;
  height: number;
}

/** A picture drawn on a canvas at most `maxSide` pixels on its longer side (never enlarged); undefined without a 2D context. */
export function drawScaled(
  bitmap: ImageBitmap,
  maxSide: number,
  options: { background?: string; willReadFrequently?: boolean } = {},
): { canvas: HTMLCanvasElement; context: CanvasRenderingContext2D; width: number; height: number } | undefined {
  const scale = Math.min(1, maxSide / Math.max(bitmap.width, bitmap.height));
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext('2d', { willReadFrequently: options.willReadFrequently === true });
  if (!context) return undefined;
  if (options.background) {
    context.fillStyle = options.background;
    context.fillRect(0, 0, width, height);
  }
  context.drawImage(bitmap, 0, 0, width, height);
  return { canvas, context, width, height };
}

/** The upright, scaled JPEG of a picture; undefined when the browser cannot decode it (it is then sent as a file). */
export async function prepareImage(file: Blob): Promise<PreparedImage | undefined> {
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file, { imageOrientation: 'from-image' });
  } catch {
    return undefined;
  }
  try {
    // JPEG has no transparency: a transparent PNG's background becomes white rather than black.
    const drawn = drawScaled(bitmap, MAX_IMAGE_SIDE, { background: '#fff' });
    if (!drawn) return undefined;
    const { canvas, width, height } = drawn;
    const blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, 'image/jpeg', JPEG_QUALITY));
    if (!blob) return undefined;
    return { bytes: new Uint8Array(await blob.arrayBuffer()), mime: 'image/jpeg', width, height };
  } finally {
    bitmap.close();
  }
}
