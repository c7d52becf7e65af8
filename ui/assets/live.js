// Live refresh: every data-live-ms the page fetches itself again and swaps
// in its <main>. The server caps refreshes per client; a refused or failed
// one is skipped. The page reads the same without this script.
(function () {
  "use strict";
  var ms = parseInt(document.body.getAttribute("data-live-ms"), 10);
  var state = document.getElementById("live-state");
  if (!(ms >= 1000)) { return; }
  function refresh() {
    if (document.hidden) { return; }
    var main = document.getElementById("main");
    if (main && main.contains(document.activeElement) && document.activeElement !== main) { return; }
    fetch(location.href, { headers: { "X-Toolcanon-Live": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) { throw new Error(String(r.status)); }
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var cur = document.getElementById("main");
        if (fresh && cur) {
          cur.replaceWith(document.importNode(fresh, true));
        }
        if (state) { state.textContent = "live · " + new Date().toLocaleTimeString(); }
      })
      .catch(function () {
        if (state) { state.textContent = "live · paused"; }
      });
  }
  setInterval(refresh, ms);
})();
