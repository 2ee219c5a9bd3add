// Live updates: the server sends a change counter; we refetch the fragment this page shows.
"use strict";
(function () {
  const main = document.getElementById("live");
  const dot = document.getElementById("live-state");
  if (!main || !main.dataset.src || !window.EventSource) return;
  const src = main.dataset.base + "/" + main.dataset.src;
  let busy = false, again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const resp = await fetch(src, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (resp.ok) main.innerHTML = await resp.text();
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }
  const events = new EventSource(main.dataset.events);
  events.onopen = () => { dot.className = "on"; };
  events.onerror = () => { dot.className = "off"; };
  events.onmessage = refresh;
})();
