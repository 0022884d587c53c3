"""A LlamaIndex node parser making the paper's 300-word chunks with exact character offsets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, TextNode
from llama_index.core.utils import get_tqdm_iterable

from selfroute import DEFAULT_CHUNK_WORDS, ConfigurationError, chunk_text

__all__ = ["WordChunkNodeParser", "chunk_node_id"]


def chunk_node_id(index: int, document: BaseNode) -> str:
    """A stable node id: ``{doc_id}:{index}`` (re-ingesting a document replaces its chunks)."""
    return f"{document.node_id}:{index}"


class WordChunkNodeParser(NodeParser):
    """Splits documents into chunks of ``chunk_words`` words (300 in the paper).

    Chunks are exact slices of the document text (``start_char_idx``/``end_char_idx`` set), so
    the document can be rebuilt in order from its chunks, and each chunk links to its document
    (``ref_doc_id``). Usable anywhere a LlamaIndex node parser is (``IngestionPipeline``,
    ``VectorStoreIndex.from_documents(..., transformations=[parser])``).

    Args:
        chunk_words: Words per chunk.
        overlap_words: Words shared by consecutive chunks.
    """

    chunk_words: int = Field(default=DEFAULT_CHUNK_WORDS, description="Words per chunk.", gt=0)
    overlap_words: int = Field(default=0, description="Words shared by neighbours.", ge=0)

    def __init__(self, **data: Any) -> None:
        data.setdefault("id_func", chunk_node_id)
        super().__init__(**data)
        if self.overlap_words >= self.chunk_words:
            raise ConfigurationError(
                f"overlap_words ({self.overlap_words}) must be smaller than chunk_words "
                f"({self.chunk_words})"
            )

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "WordChunkNodeParser"

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Chunking documents"):
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            if not text.strip():
                continue
            source = node.as_related_node_info()
            for chunk in chunk_text(
                text,
                doc_id=node.node_id,
                chunk_words=self.chunk_words,
                overlap_words=self.overlap_words,
            ):
                out.append(
                    TextNode(
                        id_=self.id_func(chunk.index, node),
                        text=chunk.text,
                        start_char_idx=chunk.start,
                        end_char_idx=chunk.end,
                        metadata=dict(node.metadata),
                        excluded_embed_metadata_keys=list(node.excluded_embed_metadata_keys),
                        excluded_llm_metadata_keys=list(node.excluded_llm_metadata_keys),
                        metadata_separator=node.metadata_separator,
                        metadata_template=node.metadata_template,
                        text_template=getattr(node, "text_template", "{metadata_str}\n\n{content}"),
                        relationships={NodeRelationship.SOURCE: source},
                    )
                )
        return out

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
    ) -> list[BaseNode]:
        # The base class re-derives offsets with str.find, which can land on an earlier repeat
        # of the same text; the chunker's offsets are exact, so keep them.
        offsets = {
            n.node_id: (n.start_char_idx, n.end_char_idx) for n in nodes if isinstance(n, TextNode)
        }
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for n in nodes:
            if isinstance(n, TextNode) and n.node_id in offsets:
                n.start_char_idx, n.end_char_idx = offsets[n.node_id]
        return nodes
