/** Images attached to an Ask: which files are taken and how they travel (no `vscode` here: unit-tested). */

import * as path from "node:path";
import type { ImageAttachment } from "./protocol";

/** File extensions the daemon takes, with their media types (`app.images` on the daemon side). */
export const IMAGE_TYPES: Record<string, ImageAttachment["mimeType"]> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};
/** The daemon's bound on one image; a larger file is refused here, before it is sent. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** `bytes` of the file `name` as an attachment; throws, in words, for a kind or size the daemon refuses. */
export function attachmentOf(name: string, bytes: Uint8Array): ImageAttachment {
  const mimeType = IMAGE_TYPES[path.extname(name).slice(1).toLowerCase()];
  if (mimeType === undefined) throw new Error(`${path.basename(name)} is not a png, jpeg, gif or webp image`);
  if (bytes.byteLength === 0) throw new Error(`${path.basename(name)} is empty`);
  if (bytes.byteLength > MAX_IMAGE_BYTES) throw new Error(`${path.basename(name)} is larger than 5 MiB`);
  return { mimeType, data: Buffer.from(bytes).toString("base64") };
}
