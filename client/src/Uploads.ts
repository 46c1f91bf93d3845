// Uploads: a file pasted or dropped in the composer, sent to `POST /api/uploads` (docs/contract.md "Uploads") as the
// raw body with its name in Content-Disposition, over XMLHttpRequest because fetch reports no upload progress. Same
// origin, the session cookie. Resolves with the file's URL or an error sentence the composer shows; never throws.

export const UPLOAD_PATH = "/api/uploads"

export type UploadOutcome =
  | { readonly ok: true; readonly url: string; readonly name: string }
  | { readonly ok: false; readonly error: string }

/** RFC 6266 §4.3 with RFC 8187: an ASCII `filename` and the exact name in `filename*`. */
export const dispositionFor = (name: string): string => {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, "_")
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`
}

const mib = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`

/** What the member reads for a refusal: the server's own sentence, said plainly for the two limits. */
export const uploadError = (status: number, body: unknown): string => {
  const e = (typeof body === "object" && body !== null ? body : {}) as { error?: string; error_description?: string; max?: number }
  if (e.error === "too_large" && typeof e.max === "number") return `The file is too large: this server takes files up to ${mib(e.max)}.`
  if (e.error === "quota_exceeded" && typeof e.max === "number") {
    return `Your uploads are full (${e.max} MiB in all); the file was not uploaded.`
  }
  if (status === 0) return "Belay could not be reached; the file was not uploaded."
  return `The upload failed: ${e.error_description ?? e.error ?? `HTTP ${status}`}`
}

/** Uploads `file`; `progress` hears the fraction sent (0 to 1). `signal` aborts it (nothing is stored then). */
export const uploadFile = (
  file: Blob & { readonly name?: string },
  progress: (fraction: number) => void,
  signal?: AbortSignal
): Promise<UploadOutcome> =>
  new Promise((resolve) => {
    const xhr = new XMLHttpRequest()
    xhr.open("POST", UPLOAD_PATH)
    xhr.withCredentials = true
    xhr.responseType = "text"
    xhr.setRequestHeader("content-type", file.type === "" ? "application/octet-stream" : file.type)
    xhr.setRequestHeader("content-disposition", dispositionFor(file.name ?? "pasted"))
    xhr.setRequestHeader("accept", "application/json")
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) progress(e.loaded / e.total)
    }
    const parsed = (): unknown => {
      try {
        return JSON.parse(xhr.responseText) as unknown
      } catch {
        return null
      }
    }
    xhr.onload = () => {
      const body = parsed() as { url?: unknown; name?: unknown } | null
      if (xhr.status === 201 && body !== null && typeof body.url === "string") {
        progress(1)
        resolve({ ok: true, url: body.url, name: typeof body.name === "string" ? body.name : "" })
      } else resolve({ ok: false, error: uploadError(xhr.status, body) })
    }
    xhr.onerror = () => resolve({ ok: false, error: uploadError(0, null) })
    xhr.onabort = () => resolve({ ok: false, error: "The upload was cancelled." })
    signal?.addEventListener("abort", () => xhr.abort(), { once: true })
    xhr.send(file)
  })
