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
/** The daemon's bound on the images of one prompt: the next Ask takes no more. */
export const MAX_IMAGES = 4;
/** The `type` of the message the trace view (media/trace.js) posts for an image pasted into it. */
export const PASTE_MESSAGE = "attachImage";

/** Standard base64 with its padding, as the daemon decodes it (`validate=True`: no whitespace). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** `bytes` of the file `name` as an attachment; throws, in words, for a kind or size the daemon refuses. */
export function attachmentOf(name: string, bytes: Uint8Array): ImageAttachment {
  const mimeType = IMAGE_TYPES[path.extname(name).slice(1).toLowerCase()];
  if (mimeType === undefined) throw new Error(`${path.basename(name)} is not a png, jpeg, gif or webp image`);
  if (bytes.byteLength === 0) throw new Error(`${path.basename(name)} is empty`);
  if (bytes.byteLength > MAX_IMAGE_BYTES) throw new Error(`${path.basename(name)} is larger than 5 MiB`);
  return { mimeType, data: Buffer.from(bytes).toString("base64") };
}

/**
 * A pasted image (its media type and its bytes in base64) as an attachment, checked by the rules a
 * file meets; throws, in words, for a kind, size or encoding the daemon refuses. The base64 is
 * measured, not decoded: the daemon decodes it.
 */
export function attachmentOfPasted(mimeType: string, base64: string): ImageAttachment {
  const kind = imageKind(mimeType);
  // Bounded before the pattern runs over it: a larger string cannot hold an image the daemon takes.
  if (base64.length > Math.ceil(MAX_IMAGE_BYTES / 3) * 4) throw new Error("it is larger than 5 MiB");
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) throw new Error("its data is not base64");
  const bytes = (base64.length / 4) * 3 - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);
  if (bytes === 0) throw new Error("it is empty");
  if (bytes > MAX_IMAGE_BYTES) throw new Error("it is larger than 5 MiB");
  return { mimeType: kind, data: base64 };
}

/**
 * The attachment a message from the trace view carries, or undefined for a message of another kind;
 * throws, in words, for a paste the daemon would refuse. The webview shows text the model and tools
 * wrote, so no field of what it posts is trusted: each is checked here. `{ type: "attachImage",
 * mimeType, bytes, data }`: `bytes` is the file's size, and `data` (base64) is left out when the
 * webview found the file too large to read.
 */
export function pastedAttachment(posted: unknown): ImageAttachment | undefined {
  if (typeof posted !== "object" || posted === null) return undefined;
  const { type, mimeType, bytes, data } = posted as Record<string, unknown>;
  if (type !== PASTE_MESSAGE) return undefined;
  if (typeof mimeType !== "string") throw new Error("it came without a media type");
  imageKind(mimeType);
  // The size the webview read only ever refuses: the data is measured itself below.
  if (typeof bytes === "number" && bytes > MAX_IMAGE_BYTES) throw new Error("it is larger than 5 MiB");
  if (typeof data !== "string") throw new Error("it came without its data");
  return attachmentOfPasted(mimeType, data);
}

/** `mimeType` as one the daemon takes; throws, in words, for another (the webview names it: shortened). */
function imageKind(mimeType: string): ImageAttachment["mimeType"] {
  const kind = Object.values(IMAGE_TYPES).find((known) => known === mimeType);
  if (kind === undefined) throw new Error(`its type ${JSON.stringify(mimeType.slice(0, 40))} is not png, jpeg, gif or webp`);
  return kind;
}

/** Throws, in words, when the next Ask already carries `count` images, as many as a prompt may. */
export function checkRoomForImage(count: number): void {
  if (count >= MAX_IMAGES) throw new Error(`the next Ask already carries ${count} images, the most a prompt may carry`);
}
