// The web client's service worker (/sw.js): shows the server's Web Push notifications (payload: src/services/push/WebPush.ts
// PushPayload) and, on a click, focuses a Belay tab on that buffer or opens one. Tagged `belay-<message id>` like the
// tab's own notifications, so a message never notifies twice.
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

self.addEventListener("install", () => {
  void self.skipWaiting()
})

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim())
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
