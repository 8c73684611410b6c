"""`LiveGraph`: a graph that takes incremental updates, durable first, then visible at once.

Every update (add / update / delete, usage write-back) runs in three steps:

1. **validate**, inside the store's write transaction (one writer at a time, across
   processes) and after reloading what other connections committed: the changed table
   is checked against the current state with :meth:`GraphTables.check`'s rules
   (nothing is written when anything is refused, unless an add says ``on_bad="skip"``)
   and the new :class:`~graphrecall.KnowledgeGraph` is built, not yet visible;
2. **commit**: the change is written in that transaction (durable when it returns, see
   :mod:`graphrecall.storage.sqlite`);
3. **swap**: the new graph, with the tables it was built from, replaces the current one
   under a lock, and ``version`` increments.

If any step fails, nothing changes: neither the file nor the graph. Readers call
:attr:`LiveGraph.graph` (or :meth:`LiveGraph.current` for the graph *and* its tables and
version) and keep the object they got: it is immutable, so a query never sees half an
update, and readers never wait for an update to finish (updates run one at a time). A
reader that finds another connection's commit (``PRAGMA data_version``) reloads the graph
first (an O(graph) read and rebuild), so several processes sharing a store each see all
acknowledged writes.

Fact adds, updates and usage write-backs, and adds of entities, chunks, mentions and
aliases make the new graph a *generation* of the current one: the changed rows go into an
overlay over the immutable base (whose arrays the generations share; new entities and
chunks take the next dense indices, with empty rows), and every query answers exactly as a
fresh build of the same tables. :meth:`LiveGraph.compact` merges the overlay into a new
base in a background thread (started by itself at ``compact_at`` of the facts). A fact
delete is a generation too (:mod:`.tombstones`): the facts are cut out of their rows and
their ids leave the fact id map at once, while their table rows and dense indices stay
until the compaction drops them (``GraphVersion.dead_facts``; :attr:`LiveGraph.tables`
compacts first, so the whole tables it gives hold no deleted row). Entity and chunk
deletes are generations as well (:mod:`.dead`): the entity's facts become tombstones, the
mentions are cut, the entity leaves its tenant's listing and the ids leave the id maps,
while the rows stay until the compaction makes one new base without them (``without``; a
fresh build renumbers the dense indices after a deleted row). Where that cannot give a
fresh build's graph (a tenant left without entities, a vocabulary word left unused) the
delete makes that new base at once (:mod:`.delete`); a tenant the graph does not hold and
a new vocabulary word rebuild the graph from the tables.

A change costs its rows, not the graph: new rows are checked against the entities and
chunks they name only, appended to column buffers with room, and given ids from the
graph's id maps. ``update_facts`` and ``record_access`` copy each changed fact column (the tables a
reader got with its graph never change); with :attr:`LiveGraph.write_in_place` they write
the changed rows in place instead (put back if the commit fails): O(change), but the
fact columns of every :attr:`LiveGraph.tables` are then the committed state, so a reader's
tables may show later updates of existing facts that its graph does not (a saved index
made from them would not match its graph).

The package holds :mod:`.report` (the version and update records), :mod:`.graph`
(:class:`LiveGraph` and its updates), :mod:`.overlay` (changes as generations),
:mod:`.deletes` (the three deletes), :mod:`.tombstones` (fact deletes), :mod:`.dead`
(entity and chunk deletes), :mod:`.delete` (deletes as a new base), :mod:`.compaction`
(the new base that drops every tombstone),
:mod:`.rows` (new rows checked and committed alone), :mod:`.updates` (``update_facts``),
:mod:`.usage` (the usage write-back of :meth:`LiveGraph.record_access`) and
:mod:`.changes` (column edits on the tables).
"""

from .graph import LiveGraph
from .report import GraphVersion, UpdateReport

__all__ = ["GraphVersion", "LiveGraph", "UpdateReport"]
