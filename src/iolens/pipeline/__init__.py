"""Whole pipelines: one capture directory per workflow run, one entry per task, one report over all of them.

naming   the workflow's names for a task (Slurm, Snakemake, Nextflow) and collision-free entry names;
scan     what a capture directory holds: merged captures, per-task part directories, loose parts (grouped
         into tasks by process tree), and the tasks that were expected but left nothing;
task     one task analysed (in a worker process) into a small summary;
merge    summaries folded into per-rule aggregates, storage-bound rules ranked, advice per rule;
snippets what `iolens wrap` prints.
The report is laid out by render/pipeline.py; `iolens report DIR` and `iolens diff DIR DIR` are
commands/_pipeline_dir.py.
"""
