/** A multipart/form-data body with one file part, and its content-type header. */
export function multipartFile(
  content: Buffer,
  { filename = 'photo.png', contentType = 'image/png', field = 'file', boundary = '----hmdp-test-boundary' } = {},
) {
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${contentType}\r\n\r\n`),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}
