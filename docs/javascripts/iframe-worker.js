// The search box opened from disk: Material runs its search in a Web Worker, and browsers refuse to start a worker
// from a file:// page. There (and only there) this runs the worker's script in a hidden iframe instead, with the
// same postMessage/"message" interface. The name contains "iframe-worker", so mkdocs-material's offline plugin
// does not add its own copy of such a shim from a CDN (the site must work with no network).
(function () {
  if (location.protocol !== "file:") return;
  class IFrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this._queue = [];
      this._ready = false;
      const frame = document.createElement("iframe");
      frame.style.display = "none";
      frame.setAttribute("aria-hidden", "true");
      document.body.appendChild(frame);
      const win = frame.contentWindow;
      this._win = win;
      // what the script posts comes out of the worker object
      win.postMessage = (data) => {
        const event = new MessageEvent("message", { data });
        this.dispatchEvent(event);
        if (typeof this.onmessage === "function") this.onmessage(event);
      };
      win.importScripts = () => {
        throw new Error("importScripts is not available in the file:// search worker");
      };
      const script = win.document.createElement("script");
      script.src = new URL(url, location.href).href;
      script.onload = () => {
        this._ready = true;
        for (const data of this._queue.splice(0)) this._deliver(data);
      };
      script.onerror = (e) => {
        this.dispatchEvent(new Event("error"));
        if (typeof this.onerror === "function") this.onerror(e);
      };
      win.document.head.appendChild(script);
    }
    _deliver(data) {
      this._win.dispatchEvent(new this._win.MessageEvent("message", { data }));
    }
    postMessage(data) {
      if (this._ready) this._deliver(data);
      else this._queue.push(data);
    }
    terminate() {}
  }
  window.Worker = IFrameWorker;
})();
