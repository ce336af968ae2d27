"""Presentation: i18n, number formats, notes, charts, text/JSON, reports, the plan view-model."""
