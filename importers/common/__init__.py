"""What the framework importers share, one module per topic, so each job has one implementation:

- `diagnostics`: the record of a diagnostic code with its documentation, a code table, the collector
  of findings and strict imports;
- `emit`: an agent being built from its playbooks and the helper playbooks bound to an importer's
  support module, Python playbooks bound by import path;
- `steps`: numbered steps with symbolic jump labels, values as PAL literals;
- `naming`: PAL names for framework names, unique names, descriptions;
- `paths`: import paths of Python objects;
- `pal_types`: annotations as text and as PAL parameter types;
- `model`: what the readers of several frameworks find alike (a tool bound by import path);
- `user_input`: the text of what a program's user answered (a helper the support modules share).

A framework's importer (`importers.langgraph`, `importers.adk`, `importers.autogen`) keeps only what is
its own; its private modules are not another importer's API.
"""
