"""The run report as one static HTML page: no network, no external files, readable at 500
hosts. Summary first (results, then causes with their actions, then what roles skipped and
why, each reason once), then filters by state, by cause, by skipped role and "changed since the
last run" (the health history), then one row per host, failures first, with its BMC, model and
location, then the golden set. A few lines of inline JavaScript filter, sort (click a column
head) and export the shown rows as CSV (report.csv beside the page has every host); without
JavaScript every row is still shown. A link can preset them:
``report.html#state=QUARANTINED&cause=gpu_missing&skip=gdr&q=rack12&new=1&sort=-0``
(``sort=N``: column N ascending, ``-N`` descending)."""

from __future__ import annotations

from collections import Counter
from html import escape

from racksmith.report.model import HostRecord, RunReport, Skip

_MAX_REASONS = 3
_MAX_REASON_CHARS = 300

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.2em 0 .4em}
.meta{color:#666;margin:0 0 1em}
.cards{display:flex;flex-wrap:wrap;gap:.6em}
.card{border:1px solid #ccc;border-radius:6px;padding:.5em .9em;cursor:pointer;background:#fafafa}
.card b{display:block;font-size:1.6em}
.card.GOLDEN{border-color:#2a7;background:#eefaf3}.card.bad{border-color:#c44;background:#fdf0f0}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #e4e4e4;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f3f3f3;position:sticky;top:0}
#hosts th{cursor:pointer;white-space:nowrap}#hosts th[aria-sort=ascending]::after{content:" \\25B2"}
#hosts th[aria-sort=descending]::after{content:" \\25BC"}
td.ok,td.changed{color:#2a7}td.FAILED,td.failed,td.unreachable{color:#c22;font-weight:600}
td.skipped,td.dash{color:#aaa}td.new{color:#b60;font-weight:600}
#hosts td:nth-child(-n+4){white-space:nowrap}
.r-GOLDEN{color:#1a6;font-weight:600}.r-bad{color:#c22;font-weight:600}
.reason{color:#555;font-size:.9em;max-width:60em}.skip{border-bottom:1px dotted #888}
.filters{margin:.6em 0;display:flex;gap:1em;align-items:center;flex-wrap:wrap}
table.causes{width:auto}tr.hidden{display:none}.golden-list{columns:4 12em;font-family:monospace}
"""

_JS = """
(function(){
  var state=document.getElementById('f-state'),cause=document.getElementById('f-cause'),
      skip=document.getElementById('f-skip'),news=document.getElementById('f-new'),
      text=document.getElementById('f-text'),shown=document.getElementById('f-shown'),
      body=document.querySelector('#hosts tbody'),rows=body.querySelectorAll('tr');
  function apply(){
    var s=state.value,c=cause.value,k=skip.value,w=news.checked,t=text.value.toLowerCase(),n=0;
    for(var i=0;i<rows.length;i++){
      var r=rows[i],ok=(!s||r.dataset.result===s)&&(!c||r.dataset.cause===c)&&
        (!k||(r.dataset.skips||'').indexOf('|'+k+'|')>=0)&&(!w||r.dataset.new==='1')&&
        (!t||r.textContent.toLowerCase().indexOf(t)>=0);
      r.className=ok?'':'hidden';if(ok)n++;
    }
    shown.textContent=n+' of '+rows.length+' hosts shown';
  }
  function fromHash(){
    var parts=location.hash.replace(/^#/,'').split('&');
    for(var i=0;i<parts.length;i++){
      var kv=parts[i].split('='),v=decodeURIComponent(kv[1]||'');
      if(kv[0]==='state')state.value=v;else if(kv[0]==='cause')cause.value=v;
      else if(kv[0]==='skip')skip.value=v;else if(kv[0]==='q')text.value=v;
      else if(kv[0]==='new')news.checked=v==='1';
      else if(kv[0]==='sort'){var n=parseInt(v,10);if(!isNaN(n))sortBy(Math.abs(n),v[0]==='-');}
    }
  }
  var heads=document.querySelectorAll('#hosts thead th');
  function sortBy(col,desc){
    if(!heads[col])return;
    var list=Array.prototype.slice.call(rows);
    list.sort(function(a,b){
      var x=a.cells[col].textContent,y=b.cells[col].textContent;
      var d=x.localeCompare(y,undefined,{numeric:true,sensitivity:'base'});
      return desc?-d:d;
    });
    for(var i=0;i<list.length;i++)body.appendChild(list[i]);
    for(var j=0;j<heads.length;j++)heads[j].removeAttribute('aria-sort');
    heads[col].setAttribute('aria-sort',desc?'descending':'ascending');
  }
  for(var h=0;h<heads.length;h++){heads[h].onclick=(function(col){return function(){
    sortBy(col,this.getAttribute('aria-sort')==='ascending');};})(h);}
  document.getElementById('f-csv').onclick=function(){
    var out=[],esc=function(v){return '"'+v.replace(/"/g,'""').trim()+'"';},cells=[];
    for(var j=0;j<heads.length;j++)cells.push(esc(heads[j].textContent));
    out.push(cells.join(','));
    for(var i=0;i<body.rows.length;i++){var r=body.rows[i];if(r.className==='hidden')continue;
      cells=[];for(var c=0;c<r.cells.length;c++)cells.push(esc(r.cells[c].textContent));
      out.push(cells.join(','));}
    var a=document.createElement('a');
    a.href='data:text/csv;charset=utf-8,'+encodeURIComponent(out.join('\\n')+'\\n');
    a.download='hosts-shown.csv';document.body.appendChild(a);a.click();a.remove();
  };
  state.onchange=cause.onchange=skip.onchange=news.onchange=apply;text.oninput=apply;
  window.onhashchange=function(){fromHash();apply();};
  fromHash();
  var cards=document.querySelectorAll('[data-set]');
  for(var i=0;i<cards.length;i++){cards[i].onclick=function(){
    var k=this.dataset.set,v=this.dataset.value;
    state.value=k==='state'?v:'';cause.value=k==='cause'?v:'';skip.value=k==='skip'?v:'';
    news.checked=k==='new';
    apply();
  };}
  apply();
})();
"""


def _bad(result: str) -> bool:
    return result != "GOLDEN"


def _link(href: str, label: str) -> str:
    return f'<a href="{escape(href, quote=True)}">{escape(label)}</a>'


def _row(rec: HostRecord, phases: list[str], since: str, skip_ids: dict[Skip, int]) -> str:
    cells = []
    for phase in phases:
        value = rec.cell(phase)
        cells.append(f'<td class="{"dash" if value == "-" else value}">{escape(value)}</td>')
    result = rec.result
    triage = rec.triage
    cause = triage.cause if triage else ""
    reasons = [escape(r[:_MAX_REASON_CHARS]) for r in rec.reasons[:_MAX_REASONS]]
    if len(rec.reasons) > _MAX_REASONS:
        reasons.append(f"(+{len(rec.reasons) - _MAX_REASONS} more in the ticket)")
    links = []
    if triage and triage.url:
        links.append(_link(triage.url, "ticket"))
    if triage and triage.ticket:
        links.append(_link(triage.ticket, "md" if triage.url else "ticket"))
    klass = "r-bad" if _bad(result) else "r-GOLDEN"
    # "|a|b|": the filter matches one skip by "|name|", whatever characters a part name has
    skips = f' data-skips="|{escape("|".join(s.what for s in rec.skips), quote=True)}|"'
    # folded: the reason once, in the summary's row (#skip-N), here its name and a tooltip
    skipped = " ".join(
        f'<a class="skip" href="#skip-{skip_ids[s]}" title="{escape(s.reason, quote=True)}">'
        f"{escape(s.what)}</a>"
        for s in rec.skips
    )
    new = ' data-new="1"' if since else ""
    facts = rec.facts
    return (
        f'<tr data-result="{escape(result, quote=True)}" data-cause="{escape(cause, quote=True)}"'
        f"{skips if rec.skips else ''}{new}>"
        f"<td>{escape(rec.name)}</td><td>{escape(str(facts.get('bmc', '')))}</td>"
        f"<td>{escape(str(facts.get('model', '')))}</td><td>{escape(rec.location or '')}</td>"
        f"{''.join(cells)}"
        f'<td class="{klass}">{escape(result)}</td>'
        f'<td class="new">{escape(since)}</td>'
        f"<td>{escape(triage.title) if triage else ''}</td>"
        f"<td>{escape(triage.action) if triage else ''}</td><td>{' '.join(links)}</td>"
        f'<td class="reason">{"<br>".join(reasons)}</td>'
        f'<td class="reason">{skipped}</td></tr>'
    )


def _skipped_section(skipped: list[tuple[Skip, list[str]]]) -> str:
    """What roles skipped, one row per distinct reason (the only place the reason is written
    out: host rows link here); a row click filters the hosts."""
    if not skipped:
        return ""
    rows = "".join(
        f'<tr id="skip-{i}" data-set="skip" data-value="{escape(skip.what, quote=True)}" '
        f'style="cursor:pointer"><td>{len(hosts)}</td><td><code>{escape(skip.what)}</code></td>'
        f"<td>{escape(skip.reason)}</td></tr>"
        for i, (skip, hosts) in enumerate(skipped)
    )
    return (
        '<h2>Skipped by role</h2><table class="causes" id="skipped"><thead><tr><th>hosts</th>'
        f"<th>role/part</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _firmware_section(matrix: list[dict]) -> str:
    """The firmware matrix (component x version x host count; issue 21): a component on two
    versions across the rack shows as two rows. Empty when no inventory was read."""
    if not matrix:
        return ""
    rows = "".join(
        f"<tr><td><code>{escape(str(r['component']))}</code></td>"
        f"<td>{escape(str(r['version']))}</td><td>{r['hosts']}</td></tr>"
        for r in matrix
    )
    return (
        '<section id="firmware"><h2>Firmware</h2><table class="causes" id="firmware-matrix">'
        f"<thead><tr><th>component</th><th>version</th><th>hosts</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _options(values: list[str], labels: dict[str, str] | None = None) -> str:
    labels = labels or {}
    return "".join(
        f'<option value="{escape(v, quote=True)}">{escape(labels.get(v, v))}</option>'
        for v in values
    )


def render_html(report: RunReport, records: list[HostRecord] | None = None) -> str:
    """The page; ``records`` in the order to show (default: failures first, golden last)."""
    if records is None:
        order = {"GOLDEN": 2, "INCOMPLETE": 1}
        records = sorted(
            report.machines(), key=lambda r: (order.get(r.result, 0), r.result, r.name)
        )
    phases = report.phases_seen()
    summary = report.summary()
    triaged = [rec.triage for rec in records if rec.triage]
    causes = Counter(t.cause for t in triaged)
    cause_info = {t.cause: t for t in triaged}
    golden = report.golden_hosts()
    since = {rec.name: report.since_last(rec) for rec in records}
    changed = sum(1 for v in since.values() if v)
    cards = "".join(
        f'<div class="card {"GOLDEN" if r == "GOLDEN" else "bad"}" data-set="state" '
        f'data-value="{escape(r, quote=True)}"><b>{n}</b>{escape(r)}</div>'
        for r, n in sorted(summary.items(), key=lambda kv: (kv[0] != "GOLDEN", kv[0]))
    )
    if report.previous_run:
        cards += (
            f'<div class="card bad" data-set="new" data-value="1"><b>{changed}</b>'
            f"changed since {escape(report.previous_run)}</div>"
        )
    cause_rows = "".join(
        f'<tr data-set="cause" data-value="{escape(c, quote=True)}" style="cursor:pointer">'
        f"<td>{n}</td><td>{escape(cause_info[c].title)}</td>"
        f"<td><code>{escape(c)}</code></td><td>{escape(cause_info[c].action)}</td></tr>"
        for c, n in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    causes_html = (
        '<table class="causes"><thead><tr><th>hosts</th><th>cause</th><th>name</th>'
        "<th>action</th></tr>"
        f"</thead><tbody>{cause_rows}</tbody></table>"
        if causes
        else "<p>No failed hosts.</p>"
    )
    head = "".join(f"<th>{escape(p)}</th>" for p in phases)
    skipped = report.skipped()
    skip_ids = {skip: i for i, (skip, _) in enumerate(skipped)}
    rows = "\n".join(_row(rec, phases, since[rec.name], skip_ids) for rec in records)
    cause_labels = {c: f"{cause_info[c].title} ({n})" for c, n in causes.items()}
    skip_counts = Counter(s.what for rec in records for s in rec.skips)
    skip_labels = {w: f"{w} ({n})" for w, n in skip_counts.items()}
    golden_list = "".join(f"<li>{escape(h)}</li>" for h in golden)
    title = f"racksmith run {report.run_id}"
    compared = (
        f"compared with run {escape(report.previous_run)}"
        if report.previous_run
        else "no earlier run in the history to compare with"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{escape(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p class="meta">{len(records)} hosts, {len(golden)} golden; started {escape(report.started)},
finished {escape(report.finished or "-")}; {escape(report.run_dir)}; {compared}</p>
<section id="summary"><h2>Summary</h2><div class="cards">{cards}</div>
<h2>Causes</h2>{causes_html}{_skipped_section(skipped)}</section>
<section><h2>Hosts</h2>
<div class="filters">
<label>state <select id="f-state"><option value="">all</option>{_options(sorted(summary))}
</select></label>
<label>cause <select id="f-cause"><option value="">all</option>
{_options(sorted(causes), cause_labels)}</select></label>
<label>skipped <select id="f-skip"><option value="">all</option>
{_options(sorted(skip_counts), skip_labels)}</select></label>
<label><input id="f-new" type="checkbox"> changed since the last run ({changed})</label>
<label>search <input id="f-text" type="search" placeholder="host, BMC, model, reason..."></label>
<span id="f-shown">{len(records)} hosts</span>
<button id="f-csv" type="button">CSV of shown hosts</button> <a href="report.csv">all (CSV)</a>
</div>
<table id="hosts"><thead><tr><th>host</th><th>BMC</th><th>model</th><th>location</th>{head}
<th>result</th><th>since last run</th><th>cause</th><th>action</th>
<th>ticket</th><th>reasons</th><th>skipped</th></tr></thead>
<tbody>
{rows}
</tbody></table></section>
<section id="golden"><h2>Golden set ({len(golden)})</h2>
<ul class="golden-list">{golden_list}</ul></section>
{_firmware_section(report.firmware_matrix())}
<script>{_JS}</script>
</body></html>
"""
