"""Snapshots room: the pinned model manifest, i.e. what exactly a model id means.

Never loads weights; backends do that from a validated :class:`Snapshot`.
"""
