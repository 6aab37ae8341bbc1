/* The spec book's search: plain JavaScript over window.AKC_INDEX (search-index.js, loaded by a
   script tag so that it works from file://). Every word of the query must appear in an entry's
   id, level, profiles, statement, or its related text (its scenarios, properties, profile twin and
   the other words of the vocabulary groups it mentions). Entries matched on their own words come
   first. Without JavaScript the page lists every requirement. */
(function () {
  "use strict";
  var index = window.AKC_INDEX || [];
  var input = document.getElementById("q");
  var list = document.getElementById("search-results");
  var status = document.getElementById("search-status");
  if (!input || !list) { return; }

  function words(text) {
    return text.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
  }

  function highlight(text, terms) {
    var frag = document.createDocumentFragment();
    var lower = text.toLowerCase();
    var pos = 0;
    while (pos < text.length) {
      var best = -1, len = 0;
      terms.forEach(function (t) {
        var at = lower.indexOf(t, pos);
        if (at !== -1 && (best === -1 || at < best)) { best = at; len = t.length; }
      });
      if (best === -1) { frag.appendChild(document.createTextNode(text.slice(pos))); break; }
      frag.appendChild(document.createTextNode(text.slice(pos, best)));
      var mark = document.createElement("mark");
      mark.textContent = text.slice(best, best + len);
      frag.appendChild(mark);
      pos = best + len;
    }
    return frag;
  }

  function run(query) {
    var terms = words(query);
    list.textContent = "";
    if (terms.length === 0) {
      document.body.classList.remove("searching");
      status.textContent = "";
      return;
    }
    document.body.classList.add("searching");
    var own = function (e) { return (e.id + " " + e.level + " " + e.profiles + " " + e.statement + " " + e.area).toLowerCase(); };
    var near = function (e) { return own(e) + " " + (e.near || "").toLowerCase(); };
    var has = function (hay) { return terms.every(function (t) { return hay.indexOf(t) !== -1; }); };
    var direct = function (e) { return has(own(e)); };
    var hits = index.filter(function (e) { return has(near(e) + " " + (e.related || "")); });
    // its own words first, then its vocabulary twins, then its scenarios; within a tier, the
    // entries whose scenarios use the query's words most
    var score = function (e) {
      var tier = direct(e) ? 0 : (has(near(e)) ? 1 : 2);
      var uses = 0;
      Object.keys(e.counts || {}).forEach(function (w) {
        if (terms.some(function (t) { return w.toLowerCase().indexOf(t) !== -1; })) { uses += e.counts[w]; }
      });
      return tier * 100000 - uses;
    };
    hits.sort(function (a, b) { return score(a) - score(b); });
    status.textContent = hits.length + (hits.length === 1 ? " requirement matches" : " requirements match") + " \u201c" + query + "\u201d.";
    hits.forEach(function (e) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = e.href;
      a.textContent = e.id;
      li.appendChild(a);
      var level = document.createElement("span");
      level.className = "muted";
      level.textContent = " " + e.level + " \u00b7 " + e.area + " ";
      li.appendChild(level);
      var p = document.createElement("div");
      p.appendChild(highlight(e.statement.replace(/`/g, ""), terms));
      li.appendChild(p);
      if (!direct(e)) {
        var why = document.createElement("div");
        why.className = "muted";
        why.textContent = "found in its scenarios, properties or the other vocabulary";
        li.appendChild(why);
      }
      list.appendChild(li);
    });
  }

  var params = new URLSearchParams(window.location.search);
  var initial = params.get("q") || "";
  input.value = initial;
  run(initial);
  input.addEventListener("input", function () { run(input.value); });
  var form = input.form;
  if (form) {
    form.addEventListener("submit", function (ev) { ev.preventDefault(); run(input.value); });
  }
})();
