"""Check the generated dashboards against Grafana's own published TypeScript types (`@grafana/schema`).

For each dashboard a `.ts` file is written: every panel's `options` and `fieldConfig.defaults.custom`
typed with its plugin's `Options` / `FieldConfig`, every query as a Prometheus query, and the whole
dashboard as a `satisfies Dashboard` literal; `tsc --strict --noEmit` then rejects unknown keys,
wrong types and bad enum strings. Two things Grafana itself writes are allowed: `definition` on
query variables, and the legacy Prometheus annotation fields (`expr`, `step`, and the title/text/tag
formats that come with them).

The npm packages live in a private folder: $WATTLOG_GRAFANA_SCHEMA_DIR, or `.grafana-schema/` at the
repository root (`scripts/setup.sh --servers` installs them there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAW = "@grafana/schema/dist/esm/raw/composable"
PLUGINS = {  # panel type: (folder, module, whether it declares a custom FieldConfig)
    "timeseries": ("timeseries", "TimeSeriesPanelCfg", True),
    "stat": ("stat", "StatPanelCfg", False),
    "table": ("table", "TablePanelCfg", True),
    "state-timeline": ("statetimeline", "StateTimelinePanelCfg", True),
}

PRELUDE = """\
import type {{
  AnnotationQuery, DataQuery, Dashboard, Panel, RowPanel, VariableModel,
}} from "@grafana/schema";
{imports}

// JSON holds an enum's string value, not the TypeScript enum member: accept exactly those strings.
type Json<T> = T extends string ? `${{T}}` : T extends (infer U)[] ? Json<U>[]
  : T extends object ? {{ [K in keyof T]: Json<T[K]> }} : T;
type Loose<T> = {{ [K in keyof T]?: Json<T[K]> }};
// The Prometheus query as @grafana/prometheus's dataquery.d.ts declares it (that package is not needed here).
type PromQuery = Json<DataQuery> & {{
  expr: string;
  legendFormat?: string;
  instant?: boolean;
  range?: boolean;
  exemplar?: boolean;
  format?: "time_series" | "table" | "heatmap";
  interval?: string;
  intervalFactor?: number;
  editorMode?: "code" | "builder";
}};
// Grafana keeps these on query variables and legacy Prometheus annotations.
type QueryVariable = Json<VariableModel> & {{ definition?: string; }};
type PromAnnotation = Json<AnnotationQuery> & {{
  expr?: string; step?: string; titleFormat?: string; textFormat?: string; tagKeys?: string;
  useValueForTime?: boolean;
}};
"""


def schema_dir() -> Path:
    """Where node_modules with @grafana/schema and typescript are."""
    return Path(os.environ.get("WATTLOG_GRAFANA_SCHEMA_DIR", ROOT / ".grafana-schema"))


def missing() -> str | None:
    """Why the check cannot run here, or None when it can."""
    folder = schema_dir()
    if shutil.which("node") is None:
        return "node is not installed (apt-get install nodejs npm)"
    for package in ("@grafana/schema", "typescript"):
        if not (folder / "node_modules" / package / "package.json").is_file():
            return f"{package} is not in {folder}/node_modules (scripts/setup.sh --servers installs it)"
    return None


def _literal(value: object) -> str:
    return json.dumps(value, indent=2)


def typescript(board: dict) -> str:
    """The .ts text of one dashboard."""
    kinds = sorted({p["type"] for p in board["panels"] if p["type"] in PLUGINS})
    imports = "\n".join(
        f'import type * as {PLUGINS[k][1]} from "{RAW}/{PLUGINS[k][0]}/panelcfg/x/{PLUGINS[k][1]}_types.gen";'
        for k in kinds
    )
    lines = [PRELUDE.format(imports=imports)]
    names = []
    for i, panel in enumerate(board["panels"]):
        name = f"panel{i}"
        names.append(name)
        if panel["type"] == "row":
            lines.append(f"const {name} = {_literal(panel)} satisfies Json<RowPanel>;")
            continue
        plugin = PLUGINS.get(panel["type"])
        if plugin is None:
            raise ValueError(f"panel {panel['title']!r}: no Grafana types known for {panel['type']!r}")
        _, cfg, has_custom = plugin
        body = dict(panel)
        options = body.pop("options", {})
        targets = body.pop("targets", [])
        field_config = json.loads(json.dumps(body.pop("fieldConfig", {"defaults": {}, "overrides": []})))
        defaults = field_config["defaults"]
        custom = defaults.pop("custom", None)
        lines.append(f"const {name}_options: Loose<{cfg}.Options> = {_literal(options)};")
        lines.append(f"const {name}_targets: PromQuery[] = {_literal(targets)};")
        if custom is not None:
            if not has_custom:
                raise ValueError(f"panel {panel['title']!r}: {panel['type']} has no custom field config")
            lines.append(f"const {name}_custom: Loose<{cfg}.FieldConfig> = {_literal(custom)};")
            defaults_ts = f"{{ ...{_literal(defaults)}, custom: {name}_custom }}"
        else:
            defaults_ts = _literal(defaults)
        fc = f"{{ overrides: {_literal(field_config.get('overrides', []))}, defaults: {defaults_ts} }}"
        lines.append(
            f"const {name} = {{ ...{_literal(body)}, options: {name}_options, targets: {name}_targets, "
            f"fieldConfig: {fc} }} satisfies Json<Panel>;"
        )
    rest = {k: v for k, v in board.items() if k not in ("panels", "templating", "annotations")}
    lines.append(f"const variables: QueryVariable[] = {_literal(board['templating']['list'])};")
    lines.append(f"const annotations: PromAnnotation[] = {_literal(board['annotations']['list'])};")
    lines.append(
        f"export const dashboard = {{ ...{_literal(rest)}, templating: {{ list: variables }}, "
        f"annotations: {{ list: annotations }}, panels: [{', '.join(names)}] }} satisfies Json<Dashboard>;"
    )
    return "\n".join(lines) + "\n"


def check(boards: dict[str, dict], out: Path) -> subprocess.CompletedProcess[str]:
    """Write one .ts per dashboard under `out` and run `tsc --strict --noEmit` over them."""
    folder = schema_dir()
    files = []
    for name, board in boards.items():
        path = out / (Path(name).stem.replace("-", "_") + ".ts")
        path.write_text(typescript(board), encoding="utf-8")
        files.append(str(path))
    (out / "node_modules").symlink_to(folder / "node_modules", target_is_directory=True)
    tsc = folder / "node_modules" / "typescript" / "bin" / "tsc"
    args = ["node", str(tsc), "--strict", "--noEmit", "--skipLibCheck", "--target", "es2022"]
    args += ["--module", "esnext", "--moduleResolution", "bundler", *files]
    return subprocess.run(args, cwd=out, capture_output=True, text=True, timeout=300, check=False)
