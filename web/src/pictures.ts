/**
 * Pictures as the API stores them, resolved to what an <img> loads. The one place the web app
 * turns a stored picture name into a URL (StoredPicture.vue and the blog editor use it):
 *
 * - `/imgs/…`: already the path the server serves (the demo data, the course's editor);
 * - `/blogs/…` and any other absolute path: an upload name from POST /upload/blog, served under `/imgs`;
 * - `https://…`, `http://…`: a picture elsewhere (the course's shops point at a CDN);
 * - anything else (empty, relative, another scheme): nothing to load, the placeholder shows.
 */
export function pictureUrl(name: string | undefined): string | null {
  const trimmed = name?.trim() ?? '';
  if (trimmed.startsWith('/imgs/') || /^https?:\/\//i.test(trimmed)) return trimmed;
  if (trimmed.startsWith('/') && !trimmed.startsWith('//')) return `/imgs${trimmed}`;
  return null;
}

/** The names of a comma-separated `images` field (tb_shop.images, tb_blog.images), blanks dropped. */
export function pictureNames(images: string | undefined): string[] {
  return (images ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
}
