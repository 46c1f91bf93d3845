// Api: the web client's REST calls (same origin, the session cookie; JSON in and out). A 401 means the session ended:
// the tab goes back to sign-in. Never throws for an HTTP status: the caller reads `ok` and the body.

export type ApiAnswer<A> =
  | { readonly ok: true; readonly status: number; readonly body: A }
  | { readonly ok: false; readonly status: number; readonly error: string }

export const signInAgain = () => location.assign(`/login?${new URLSearchParams({ next: "/" })}`)

export const api = async <A>(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown): Promise<ApiAnswer<A>> => {
  let res: Response
  try {
    res = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: body === undefined ? { accept: "application/json" } : { accept: "application/json", "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  } catch {
    return { ok: false, status: 0, error: "Belay could not be reached." }
  }
  if (res.status === 401) {
    signInAgain()
    return { ok: false, status: 401, error: "Signed out." }
  }
  const text = await res.text()
  let json: unknown = null
  try {
    json = text === "" ? null : JSON.parse(text)
  } catch {
    json = null
  }
  if (res.ok) return { ok: true, status: res.status, body: json as A }
  const e = json as { error?: string; error_description?: string; message?: string } | null
  return { ok: false, status: res.status, error: e?.error_description ?? e?.message ?? e?.error ?? `HTTP ${res.status}` }
}
