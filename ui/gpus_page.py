"""The GPUs & prices page: every profile with its cheapest quote, your price overrides, adding a GPU profile."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from planner.engine.cost import STALE_QUOTE_DAYS, choose_quote
from planner.inputs import price_refresh, user_profiles
from planner.inputs.errors import InputError
from planner.inputs.profiles import MEMORY_SOURCES, VENDORS
from planner.inputs.userdata import (
    price_overrides_path,
    remove_price_override,
    save_price_override,
    user_profiles_dir,
)
from planner.present import fmt, gpu_table, result_views
from planner.present.charts import option_label
from planner.present.notes import number_in
from planner.vocab import PEAK_KEYS, RENTAL_TIERS
from ui import page_data
from ui.i18n_ui import begin_run, choice_label, dataframe, locale, localized, tr
from ui.markup import md, trm

BILLING = (3600, 60, 1)
# Form widget key -> the profile field named in validation errors (to say which box to fix).
PROFILE_KEYS = {"pf_id": "id", "pf_name": "name", "pf_vendor": "vendor", "pf_architecture": "architecture",
                "pf_cc": "compute_capability", "pf_nvml": "nvml_names", "pf_memory": "memory_gib",
                "pf_memory_source": "memory_gib_source", "pf_bandwidth": "memory_bandwidth_gb_per_s",
                **{f"pf_{p}": p for p in PEAK_KEYS}, "pf_tdp": "tdp_w", "pf_ic_kind": "interconnect_kind",
                "pf_ic_bw": "interconnect_gb_per_s", "pf_pcie": "pcie_gen", "pf_sources": "sources",
                "pf_notes": "notes"}


# ---------------------------------------------------------------- the table

def profiles_frame(rows: list[gpu_table.ProfileRow]) -> pd.DataFrame:
    loc = locale()
    out = []
    for r in rows:
        # What a plan bills first (and its Latin American alternative), then the hardware facts.
        row = {tr("pages.gpus.col.name"): r.name, tr("pages.gpus.col.memory_gib"): r.memory_gib,
               tr("pages.gpus.col.price"): r.usd_per_gpu_hour,
               tr("pages.gpus.col.as_of"): (fmt.date(r.price_as_of, loc) if r.price_as_of
                                            else tr("pages.gpus.quote.date_unknown") if r.provider else "—"),
               tr("pages.gpus.col.stale"): r.stale,
               tr("pages.gpus.col.offer"): fmt.offer(r.provider, r.instance or "", r.region) if r.provider else "—",
               tr("pages.gpus.col.latam_price"): r.latam_usd_per_gpu_hour,
               tr("pages.gpus.col.latam_offer"): r.latam_offer or tr("pages.gpus.quote.no_latam"),
               tr("pages.gpus.col.bandwidth"): r.bandwidth_gb_per_s}
        for p in PEAK_KEYS:
            row[tr("pages.gpus.col.peak", precision=p)] = r.peaks[p]
        row[tr("pages.gpus.col.measured_points")] = r.measured_points
        row[tr("pages.gpus.col.published_points")] = r.published_points
        row[tr("pages.gpus.col.origin")] = tr(f"common.origin.{r.price_origin}") if r.price_origin else "—"
        row[tr("pages.gpus.col.id")] = r.id
        row[tr("pages.gpus.col.yours")] = r.added_by_you
        row[tr("pages.gpus.col.memory_source")] = tr(f"pages.gpus.memory_source.{r.memory_gib_source}")
        row[tr("pages.gpus.col.estimated")] = ", ".join(r.estimated)
        row[tr("pages.gpus.col.tdp")] = r.tdp_w
        # "nvlink3_bridge 112.5 GB/s": the bandwidth in the locale's format
        row[tr("pages.gpus.col.interconnect")] = (
            f"{r.interconnect_kind} {number_in(r.interconnect_gb_per_s, 'g', locale())} GB/s"
            if r.interconnect_kind and r.interconnect_gb_per_s is not None else "—")
        out.append(row)
    return pd.DataFrame(out)


def _table(inputs, today: dt.date) -> list[gpu_table.ProfileRow]:
    ss = st.session_state
    st.selectbox(tr("pages.gpus.tier"), RENTAL_TIERS, key="gpus_tier",
                 format_func=choice_label("common.tier"), help=tr("pages.gpus.tier_help"))
    rows = gpu_table.profile_rows(inputs.profiles, inputs.price_overrides, ss["gpus_tier"], today,
                                  points=result_views.point_counts(inputs.results))
    config = {tr("pages.gpus.col.yours"): st.column_config.CheckboxColumn(),
              tr("pages.gpus.col.stale"): st.column_config.CheckboxColumn(help=tr("pages.gpus.stale_help")),
              tr("pages.gpus.col.price"): st.column_config.NumberColumn(),
              tr("pages.gpus.col.latam_price"): st.column_config.NumberColumn(),
              tr("pages.gpus.col.memory_gib"): st.column_config.NumberColumn()}
    frame = profiles_frame(rows)
    shown: dict[str, int | str] = {tr("pages.gpus.col.price"): "usd2", tr("pages.gpus.col.latam_price"): "usd2",
             tr("pages.gpus.col.memory_gib"): 1,
             **{c: "g" for c in frame.columns if frame[c].dtype.kind == "f" and c not in config}}
    dataframe(localized(frame, shown), hide_index=True, width="stretch", column_config=config, key="gpus_table",
              height=38 + 35 * min(len(rows), 16))
    n_stale = sum(1 for r in rows if r.stale)
    n_none = sum(1 for r in rows if r.usd_per_gpu_hour is None)
    st.caption(tr("pages.gpus.table_caption", n=len(rows), stale=n_stale, none=n_none,
                  days=STALE_QUOTE_DAYS))
    return rows


# ---------------------------------------------------------------- online price refresh (gpuhunt)

def _on_refresh() -> None:
    # A callback: it runs before the page, so the tables of this same run already use the new quotes.
    ss = st.session_state
    try:
        ss["_refresh"] = ("ok", price_refresh.refresh())
    except price_refresh.RefreshError as exc:
        ss["_refresh"] = (exc.kind, exc.detail)
    except InputError as exc:
        ss["_refresh"] = ("bad_input", str(exc))


def changes_frame(changes, old: bool, new: bool) -> pd.DataFrame:
    loc = locale()
    rows = []
    for c in changes:
        row = {tr("pages.gpus.col.id"): c.profile, tr("pages.gpus.col.provider"): f"{c.provider} · {c.instance}",
               tr("pages.gpus.col.region"): c.region or "—", tr("pages.gpus.col.tier"): tr(f"common.tier.{c.tier}"),
               tr("pages.gpus.col.gpus_per_instance"): c.gpus_per_instance}
        if old:
            row[tr("pages.gpus.refresh.col.old")] = c.old_usd_per_gpu_hour
        if new:
            row[tr("pages.gpus.refresh.col.new")] = c.new_usd_per_gpu_hour
        if old and new:
            row[tr("pages.gpus.refresh.col.change")] = fmt.percent(c.change, loc, 1)
        rows.append(row)
    return pd.DataFrame(rows)


def _refresh_section() -> None:
    ss = st.session_state
    loc = locale()
    st.subheader(tr("pages.gpus.refresh.title"))
    st.caption(trm("pages.gpus.refresh.intro", folder=str(user_profiles_dir() / "catalog"),
                   command=price_refresh.INSTALL_COMMAND, seconds=f"{price_refresh.DEFAULT_TIMEOUT_S:g}"))
    st.button(tr("pages.gpus.refresh.button"), key="gpus_refresh", on_click=_on_refresh,
              help=tr("pages.gpus.refresh.help"))
    state = ss.get("_refresh")
    if state is None:
        return
    if state[0] != "ok":
        st.warning(trm(f"pages.gpus.refresh.error.{state[0]}", detail=state[1]))
        return
    outcome = state[1]
    result, diff = outcome.result, outcome.diff
    st.success(trm("pages.gpus.refresh.done", quotes=result.quote_count, gpus=len(result.quotes),
                   providers=", ".join(i.provider for i in outcome.imports), day=fmt.date(outcome.day, loc)))
    if outcome.failed:
        st.warning(trm("pages.gpus.refresh.partial", detail="; ".join(f"{p}: {why}" for p, why in outcome.failed.items())))
    pct = fmt.percent(diff.threshold, loc)
    st.markdown(tr("pages.gpus.refresh.counts", added=len(diff.added), removed=len(diff.removed),
                   changed=len(diff.changed), unchanged=diff.unchanged, pct=pct))
    if result.unmapped:
        st.caption(tr("pages.gpus.refresh.unmapped", n=sum(result.unmapped.values())))
    prices = {tr("pages.gpus.refresh.col.old"): "usd4", tr("pages.gpus.refresh.col.new"): "usd4"}
    tables = (("refresh_changed", tr("pages.gpus.refresh.changed", n=len(diff.changed), pct=pct), diff.changed, True, True),
              ("refresh_added", tr("pages.gpus.refresh.added", n=len(diff.added)), diff.added, False, True),
              ("refresh_removed", tr("pages.gpus.refresh.removed", n=len(diff.removed)), diff.removed, True, False))
    for key, title, entries, old, new in tables:
        if entries:
            st.markdown(f"**{md(title)}**")
            dataframe(localized(changes_frame(entries, old, new), prices), hide_index=True, width="stretch",
                      key=key, height=38 + 35 * min(len(entries), 10))


# ---------------------------------------------------------------- price overrides

def _on_override(known: list[str]) -> None:
    ss = st.session_state
    ss.pop("_override_error", None)
    ss.pop("_override_ok", None)
    gpu = ss["price_gpu"]
    try:
        quote = user_profiles.override_quote(
            gpu, known, provider=ss["ov_provider"], instance=ss["ov_instance"], usd_per_gpu_hour=ss["ov_price"],
            tier=ss["ov_tier"], gpus_per_instance=int(ss["ov_gpus"]), billing_increment_s=int(ss["ov_billing"]),
            region=ss["ov_region"], as_of=ss["ov_as_of"], source=ss["ov_source"])
    except InputError as exc:
        ss["_override_error"] = str(exc)
        return
    save_price_override(gpu, quote)
    ss["_override_ok"] = (gpu, quote.provider, quote.instance, quote.usd_per_gpu_hour)


def _on_remove_override(gpu_id: str, provider: str, instance: str, tier: str) -> None:
    remove_price_override(gpu_id, provider, instance, tier)  # False (nothing removed) needs no message


def _overrides(inputs, current, today: dt.date) -> None:
    ss = st.session_state
    loc = locale()
    known = sorted(inputs.profiles, key=lambda g: inputs.profiles[g].name)
    st.subheader(tr("pages.gpus.prices_title"))
    st.caption(trm("pages.gpus.prices_intro", path=str(price_overrides_path())))
    try:
        plan = page_data.plan_for(current)
    except InputError as exc:
        plan = None
        st.warning(tr("pages.gpus.plan_error", message=md(exc)))
    primary = plan.option(plan.recommendation.primary) if plan else None
    if ss.get("price_gpu") not in known:
        ss["price_gpu"] = primary.gpu_id if primary and primary.gpu_id in known else known[0]
    st.selectbox(tr("pages.gpus.price_gpu"), known, key="price_gpu",
                 format_func=lambda g: f"{inputs.profiles[g].name} ({g})")
    gpu = inputs.profiles[ss["price_gpu"]]
    quotes = gpu_table.quotes_of(gpu, inputs.price_overrides.get(gpu.id, []), today)
    if quotes:
        dataframe(localized(pd.DataFrame([{
            tr("pages.gpus.col.provider"): f"{q['provider']} · {q['instance']}", tr("pages.gpus.col.tier"):
            tr(f"common.tier.{q['tier']}"), tr("pages.gpus.col.price"): q["usd_per_gpu_hour"],
            tr("pages.gpus.col.gpus_per_instance"): q["gpus_per_instance"], tr("pages.gpus.col.region"): q["region"] or "—",
            tr("pages.gpus.col.as_of"): fmt.date(q["as_of"], loc) if q["as_of"] else tr("pages.gpus.quote.date_unknown"),
            tr("pages.gpus.col.stale"): q["stale"], tr("pages.gpus.col.replaced"): q["replaced"],
            tr("pages.gpus.col.origin"): tr(f"common.origin.{q['origin']}"),
            tr("pages.gpus.col.collected"): (tr("pages.gpus.quote.collected_catalog", day=fmt.date(q["retrieved"], loc))
                                          if q["retrieved"] else tr("pages.gpus.quote.collected_hand")),
            tr("pages.gpus.col.source"): q["source"]} for q in quotes]), {tr("pages.gpus.col.price"): "usd2"}),
            hide_index=True, width="stretch", key="price_quotes")
    else:
        st.info(tr("pages.gpus.no_quotes", name=gpu.name))
    if gpu.purchase is not None:  # what on-prem plans amortise (planner.engine.cost.on_prem_purchase)
        st.caption(trm("pages.gpus.purchase", usd=fmt.money(gpu.purchase.usd, "USD", loc), kind=gpu.purchase.kind,
                       date=fmt.date(gpu.purchase.as_of, loc), source=gpu.purchase.source))
    else:
        st.caption(trm("pages.gpus.no_purchase", name=gpu.name))

    # A new GPU (or a return from another page, which drops form values): start from the quote a plan bills at
    # for the table's tier, so a typed price replaces exactly that offer.
    tier = ss.get("gpus_tier") or "on_demand"
    if ss.get("_ov_for") != (gpu.id, tier) or "ov_provider" not in ss:
        q = choose_quote(gpu.prices, tier, "cheapest", inputs.price_overrides.get(gpu.id, []), today)
        ss["_ov_for"] = (gpu.id, tier)
        ss["ov_provider"] = q.provider if q else "my-provider"
        ss["ov_instance"] = q.instance if q else "custom"
        ss["ov_tier"] = q.tier if q else tier
        ss["ov_gpus"] = int(q.gpus_per_instance) if q else 1
        ss["ov_price"] = float(q.usd_per_gpu_hour) if q else 1.0
        ss["ov_billing"] = int(q.billing_increment_s) if q else 3600
        ss["ov_region"], ss["ov_as_of"], ss["ov_source"] = (q.region or "") if q else "", today, ""
    with st.form("override_form", border=True):
        st.markdown("**" + tr("pages.gpus.override_title", name=gpu.name) + "**")
        c1, c2, c3 = st.columns(3)
        with c1:
            st.text_input(tr("pages.gpus.ov_provider"), key="ov_provider", max_chars=80)
            st.text_input(tr("pages.gpus.ov_instance"), key="ov_instance", max_chars=80)
            st.text_input(tr("pages.gpus.ov_region"), key="ov_region", max_chars=40)
        with c2:
            st.number_input(tr("pages.gpus.ov_price"), min_value=0.0, max_value=1000.0, step=0.05, format="%.3f",
                            key="ov_price", help=tr("pages.gpus.ov_price_help"))
            st.selectbox(tr("pages.gpus.ov_tier"), RENTAL_TIERS, key="ov_tier",
                         format_func=choice_label("common.tier"))
            st.number_input(tr("pages.gpus.ov_gpus"), min_value=1, max_value=64, step=1, key="ov_gpus")
        with c3:
            billing = sorted({*BILLING, int(ss["ov_billing"])}, reverse=True)
            named = choice_label("pages.gpus.billing")
            st.selectbox(tr("pages.gpus.ov_billing"), billing, key="ov_billing",
                         format_func=lambda s: named(s) if s in BILLING else f"{s} s")
            st.date_input(tr("pages.gpus.ov_as_of"), key="ov_as_of", format="YYYY-MM-DD", max_value=today)
            st.text_input(tr("pages.gpus.ov_source"), key="ov_source", max_chars=200,
                          placeholder=tr("pages.gpus.ov_source_placeholder"))
        st.form_submit_button(tr("pages.gpus.ov_save"), type="primary", on_click=_on_override, args=(known,),
                              key="ov_save")
    if ss.get("_override_error"):
        st.error(tr("pages.gpus.override_error", message=md(ss["_override_error"])))
    elif ss.get("_override_ok"):
        gid, provider, instance, usd = ss["_override_ok"]
        st.success(trm("pages.gpus.override_ok", gpu=gid, provider=provider, instance=instance,
                       price=fmt.money(usd, "USD", loc, 2)))
    for i, q in enumerate(inputs.price_overrides.get(gpu.id, [])):
        st.button(tr("pages.gpus.ov_remove", provider=q.provider, instance=q.instance, tier=tr(f"common.tier.{q.tier}")),
                  key=f"ov_remove_{gpu.id}_{i}", on_click=_on_remove_override,
                  args=(gpu.id, q.provider, q.instance, q.tier))
    if plan is not None:
        _effect(plan, current, gpu)
    if inputs.price_overrides:
        with st.expander(tr("pages.gpus.all_overrides", n=sum(len(v) for v in inputs.price_overrides.values()))):
            yours = pd.DataFrame([{tr("pages.gpus.col.id"): gid, tr("pages.gpus.col.provider"): f"{q.provider} · {q.instance}",
                                   tr("pages.gpus.col.tier"): tr(f"common.tier.{q.tier}"),
                                   tr("pages.gpus.col.price"): q.usd_per_gpu_hour,
                                   tr("pages.gpus.col.as_of"): fmt.date(q.as_of, loc)}
                                  for gid, qs in inputs.price_overrides.items() for q in qs])
            dataframe(localized(yours, {tr("pages.gpus.col.price"): "usd3"}), hide_index=True, width="stretch",
                      key="all_overrides")


def _effect(plan, current, gpu) -> None:
    """What the current scenario costs on this GPU, and which price (published or yours) each option bills at."""
    loc = locale()
    st.markdown("**" + trm("pages.gpus.effect_title", scenario=current.name, gpu=gpu.name) + "**")
    mine = [o for o in plan.options if o.gpu_id == gpu.id]
    rows = []
    for o in mine:
        c = o.cost
        rows.append({tr("pages.gpus.col.option"): option_label(o), tr("pages.gpus.col.fits"): o.fits,
                     tr("pages.gpus.col.hours"): None if c is None else round(c.hours, 2),
                     tr("pages.gpus.col.cost_usd"): None if c is None else round(c.usd, 2),
                     tr("pages.gpus.col.price"): c.price.usd_per_gpu_hour if c and c.price else None,
                     tr("pages.gpus.col.origin"): tr(f"common.origin.{c.price.origin}") if c and c.price else "—",
                     tr("pages.gpus.col.price_origin_key"): c.price.origin if c and c.price else None,
                     tr("pages.gpus.col.option_id"): o.id})
    if rows:
        dataframe(localized(pd.DataFrame(rows), {tr("pages.gpus.col.price"): "usd3", tr("pages.gpus.col.hours"): 2,
                                                 tr("pages.gpus.col.cost_usd"): "usd2"}),
                  hide_index=True, width="stretch", key="price_effect")
    primary = plan.option(plan.recommendation.primary)
    if primary is not None and primary.cost is not None and primary.cost.price is not None:
        p = primary.cost.price
        st.caption(trm("pages.gpus.effect_primary", option=option_label(primary),
                       cost=fmt.money(primary.cost.usd, "USD", loc), origin=tr(f"common.origin.{p.origin}"),
                       provider=p.provider))


# ---------------------------------------------------------------- adding a profile

def _on_prefill() -> None:
    ss = st.session_state
    ss.pop("_prefill_msg", None)
    found = page_data.detection()
    values = user_profiles.prefill_from_detect(found.facts) if found.status == "ok" and found.facts else None
    if values is None:
        why = (tr("pages.gpus.prefill_no_torch", python=found.python) if found.status == "no_torch" else
               (found.facts or {}).get("cuda_reason") or found.message or found.status)
        ss["_prefill_msg"] = ("info", tr("pages.gpus.prefill_none", why=why))
        return
    for key, field in PROFILE_KEYS.items():
        if field in values:
            ss[key] = values[field]
    ss["_prefill_msg"] = ("ok", tr("pages.gpus.prefill_ok", name=values["name"]))


def _form_values() -> dict:
    ss = st.session_state
    return {field: ss.get(key) for key, field in PROFILE_KEYS.items()}


def _on_add_profile(known: list[str]) -> None:
    ss = st.session_state
    ss.pop("_profile_error", None)
    ss.pop("_profile_ok", None)
    try:
        profile = user_profiles.validate_new_profile(user_profiles.profile_data(_form_values()), known)
        path = user_profiles.save_profile(profile)
    except InputError as exc:
        ss["_profile_error"] = (exc.field, str(exc))
        return
    ss["_profile_ok"] = (profile.id, str(path))


def _label_of(field: str) -> str:
    """The form box an error field belongs to ('peak_tflops.fp16' -> the fp16 peak box)."""
    top = field.split(".")[-1] if field.startswith("peak_tflops.") else field.split(".")[0].split("[")[0]
    if field.startswith("interconnect."):
        top = "interconnect_gb_per_s" if field.endswith("gb_per_s") else "interconnect_kind"
    key = next((k for k, f in PROFILE_KEYS.items() if f == top), None)
    return tr(f"pages.gpus.pf.{key}") if key else field


def _add_profile(inputs) -> None:
    ss = st.session_state
    known = sorted(inputs.profiles)
    st.subheader(tr("pages.gpus.add_title"))
    st.caption(trm("pages.gpus.add_intro", folder=str(user_profiles_dir())))
    for key, field in PROFILE_KEYS.items():
        ss.setdefault(key, user_profiles.FORM_DEFAULTS[field])
    st.button(tr("pages.gpus.prefill"), key="profile_prefill", on_click=_on_prefill,
              help=tr("pages.gpus.prefill_help"))
    msg = ss.get("_prefill_msg")
    if msg:
        (st.success if msg[0] == "ok" else st.info)(md(msg[1]))
    with st.form("profile_form", border=True):
        c1, c2, c3 = st.columns(3)
        with c1:
            st.text_input(tr("pages.gpus.pf.pf_id"), key="pf_id", max_chars=60, help=tr("pages.gpus.pf_id_help"))
            st.text_input(tr("pages.gpus.pf.pf_name"), key="pf_name", max_chars=120)
            st.selectbox(tr("pages.gpus.pf.pf_vendor"), VENDORS, key="pf_vendor")
            st.text_input(tr("pages.gpus.pf.pf_architecture"), key="pf_architecture", max_chars=60)
            st.text_input(tr("pages.gpus.pf.pf_cc"), key="pf_cc", max_chars=12)
            st.text_input(tr("pages.gpus.pf.pf_nvml"), key="pf_nvml", max_chars=300, help=tr("pages.gpus.pf_nvml_help"))
        with c2:
            st.number_input(tr("pages.gpus.pf.pf_memory"), min_value=0.0, max_value=2048.0, step=1.0, key="pf_memory",
                            format="%.2f", help=tr("pages.gpus.pf_memory_help"))
            st.selectbox(tr("pages.gpus.pf.pf_memory_source"), MEMORY_SOURCES, key="pf_memory_source",
                         format_func=choice_label("pages.gpus.memory_source"))
            st.number_input(tr("pages.gpus.pf.pf_bandwidth"), min_value=0.0, max_value=50000.0, step=10.0,
                            key="pf_bandwidth", format="%.0f")
            st.number_input(tr("pages.gpus.pf.pf_tdp"), min_value=0.0, max_value=5000.0, step=5.0, key="pf_tdp",
                            format="%.0f")
            st.text_input(tr("pages.gpus.pf.pf_ic_kind"), key="pf_ic_kind", max_chars=40,
                          placeholder="pcie4 / nvlink4")
            st.number_input(tr("pages.gpus.pf.pf_ic_bw"), min_value=0.0, max_value=50000.0, step=8.0, key="pf_ic_bw",
                            format="%.0f")
            st.number_input(tr("pages.gpus.pf.pf_pcie"), min_value=1, max_value=7, step=1, key="pf_pcie")
        with c3:
            for p in PEAK_KEYS:
                st.number_input(tr(f"pages.gpus.pf.pf_{p}"), min_value=0.0, max_value=20000.0, step=1.0,
                                key=f"pf_{p}", format="%.1f", help=tr("pages.gpus.pf_peak_help"))
        st.text_area(tr("pages.gpus.pf.pf_sources"), key="pf_sources", max_chars=2000, height=80,
                     help=tr("pages.gpus.pf_sources_help"))
        st.text_input(tr("pages.gpus.pf.pf_notes"), key="pf_notes", max_chars=500)
        st.form_submit_button(tr("pages.gpus.pf_save"), type="primary", on_click=_on_add_profile, args=(known,),
                              key="pf_save")
    if ss.get("_profile_error"):
        field, message = ss["_profile_error"]
        st.error(trm("pages.gpus.profile_error", box=_label_of(field) if field else "—", message=message))
    elif ss.get("_profile_ok"):
        pid, path = ss["_profile_ok"]
        st.success(trm("pages.gpus.profile_ok", id=pid, path=path))


def main() -> None:
    begin_run()
    today = dt.date.today()
    inputs = page_data.inputs()
    current, _ = page_data.current_scenario(list(inputs.profiles))
    st.title(tr("pages.gpus.title"))
    st.caption(tr("pages.gpus.tagline"))
    for problem in inputs.profile_problems + inputs.override_problems:  # the files this page shows
        st.warning(md(problem))
    _table(inputs, today)
    _refresh_section()
    _overrides(inputs, current, today)
    _add_profile(inputs)


if __name__ == "__main__":
    main()
