// The web client's service worker (/sw.js): shows the server's Web Push notifications (payload: src/services/push/WebPush.ts
// PushPayload) and, on a click, focuses a Belay tab on that buffer or opens one. Tagged `belay-<message id>` like the
// tab's own notifications, so a message never notifies twice.
//
// It also keeps the offline shell (docs/decisions/web.md "Installable"): the HTML at `/` and the files it names
// (`/client/<name>-<hash>`), so an installed Belay opens without a network and says it is reconnecting, instead of the
// browser's error page. `/` goes to the network first and the copy is the fallback (a new release is seen at once);
// a hashed file never changes, so the cached copy is served first. Only a 200 answer of `/` itself is kept (never the
// sign-in redirect), and each new shell replaces the files of the one before. Nothing else — no /api answer, no
// message — is ever cached.
declare const self: ServiceWorkerGlobalScope

// A module, so that `self` above is this scope's own declaration.
export {}

interface PushPayload {
  readonly type: "message"
  readonly title: string
  readonly body: string
  readonly networkId: number
  readonly target: string
  readonly messageId: number
}

const SHELL_CACHE = "belay-shell-v1"
const SHELL = "/"

/** The bundle files a shell names (the HTML's `/client/…` links: its script and stylesheet). */
const shellFiles = (html: string): ReadonlyArray<string> => [...new Set([...html.matchAll(/"(\/client\/[^"?#]+)"/g)].map((m) => m[1]!))]

/** Keeps `response` as the shell, with its files, and drops the files of earlier shells. */
const keepShell = async (response: Response): Promise<void> => {
  if (!response.ok || response.redirected || new URL(response.url).pathname !== SHELL) return
  const cache = await caches.open(SHELL_CACHE)
  const files = shellFiles(await response.clone().text())
  await cache.addAll([...files])
  await cache.put(SHELL, response)
  const wanted = new Set(files.map((f) => new URL(f, self.location.origin).href))
  for (const request of await cache.keys()) {
    if (new URL(request.url).pathname !== SHELL && !wanted.has(request.url)) await cache.delete(request)
  }
}

self.addEventListener("install", (event) => {
  // The shell of the member who is signed in now; offline or signed out, the first visit after keeps it instead.
  event.waitUntil(fetch(SHELL, { credentials: "same-origin" }).then(keepShell).catch(() => undefined))
  void self.skipWaiting()
})

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) if (name !== SHELL_CACHE) await caches.delete(name)
    await self.clients.claim()
  })())
})

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url)
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return
  if (event.request.mode === "navigate" && url.pathname === SHELL) {
    event.respondWith((async () => {
      try {
        const response = await fetch(event.request)
        event.waitUntil(keepShell(response.clone()).catch(() => undefined))
        return response
      } catch (error) {
        const kept = await caches.match(SHELL, { cacheName: SHELL_CACHE })
        if (kept !== undefined) return kept
        throw error
      }
    })())
  } else if (url.pathname.startsWith("/client/")) {
    event.respondWith((async () => (await caches.match(event.request, { cacheName: SHELL_CACHE })) ?? fetch(event.request))())
  }
})

self.addEventListener("push", (event) => {
  let payload: PushPayload
  try {
    payload = event.data?.json() as PushPayload
  } catch {
    return
  }
  if (payload?.type !== "message") return
  event.waitUntil(
    self.registration.showNotification(payload.title, {
      body: payload.body,
      tag: `belay-${payload.messageId}`,
      data: { networkId: payload.networkId, target: payload.target }
    })
  )
})

self.addEventListener("notificationclick", (event) => {
  event.notification.close()
  const data = event.notification.data as { networkId: number; target: string } | null
  const hash = data === null ? "" : `#/b/${data.networkId}/${encodeURIComponent(data.target)}`
  event.waitUntil((async () => {
    const tabs = await self.clients.matchAll({ type: "window", includeUncontrolled: true })
    const tab = tabs.find((c) => new URL(c.url).pathname === "/")
    if (tab !== undefined) {
      await tab.focus()
      if (data !== null) tab.postMessage({ type: "open", networkId: data.networkId, target: data.target })
      return
    }
    await self.clients.openWindow(`/${hash}`)
  })())
})
