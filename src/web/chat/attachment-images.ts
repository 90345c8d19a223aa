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

/** The upright, scaled JPEG of a picture; undefined when the browser cannot decode it (it is then sent as a file). */
export async function prepareImage(file: Blob): Promise<PreparedImage | undefined> {
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file, { imageOrientation: 'from-image' });
  } catch {
    return undefined;
  }
  try {
    const scale = Math.min(1, MAX_IMAGE_SIDE / Math.max(bitmap.width, bitmap.height));
    const width = Math.max(1, Math.round(bitmap.width * scale));
    const height = Math.max(1, Math.round(bitmap.height * scale));
    const canvas = document.createElement('canvas');
    canvas.width = width;
    canvas.height = height;
    const context = canvas.getContext('2d');
    if (!context) return undefined;
    // JPEG has no transparency: a transparent PNG's background becomes white rather than black.
    context.fillStyle = '#fff';
    context.fillRect(0, 0, width, height);
    context.drawImage(bitmap, 0, 0, width, height);
    const blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, 'image/jpeg', JPEG_QUALITY));
    if (!blob) return undefined;
    return { bytes: new Uint8Array(await blob.arrayBuffer()), mime: 'image/jpeg', width, height };
  } finally {
    bitmap.close();
  }
}
