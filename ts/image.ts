import type { ReadFileImage } from "./generated/contract.js";
export type { ReadFileImage } from "./generated/contract.js";
// Images as read_file returns them. No native code here, so the adapters can recognize an
// image result without loading the addon.

/**
 * What read_file returns for an image: a PNG, JPEG, GIF or WebP file (recognized by its first
 * bytes, never by its name) of at most 5 MiB, read whole (`offset` / `limit` are not used).
 */
export type ReadImageOutput = ReadFileImage;

/** Largest image read_file returns, in bytes (5 MiB). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** Whether a read_file result is an image. */
export function isImageOutput(output: unknown): output is ReadImageOutput {
  if (typeof output !== "object" || output === null) return false;
  const o = output as Record<string, unknown>;
  return (
    typeof o.data === "string" &&
    typeof o.path === "string" &&
    (o.mimeType === "image/png" || o.mimeType === "image/jpeg" || o.mimeType === "image/gif" || o.mimeType === "image/webp")
  );
}
