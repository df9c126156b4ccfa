"""Hand-written answers for the shipped ``hf-dataset-card`` test cases (see answers_kernel_builder)."""

GOOD: dict[str, str] = {
    "configs-two-splits": """```yaml
---
license: apache-2.0
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*.parquet
  - split: test
    path: data/test-*.parquet
---
```""",
    "multiple-subsets": """```yaml
configs:
- config_name: skills
  data_files: data/skills/*.parquet
- config_name: results
  default: true
  data_files: data/results/*.parquet
- config_name: runs
  data_files: data/runs/*.parquet
```""",
    "size-category": "Use the bucket string as a list:\n\n```yaml\nsize_categories:\n- 1K<n<10K\n```",
    "card-from-code": """```python
from huggingface_hub import DatasetCard, DatasetCardData

data = DatasetCardData(license="mit", pretty_name="Bench")
card = DatasetCard.from_template(data, template_str="---\\n{{ card_data }}\\n---\\n# Bench\\n")
card.validate(repo_type="dataset")
card.push_to_hub("my-org/bench", repo_type="dataset")
```""",
    "load-a-config": """```python
from datasets import load_dataset
ds = load_dataset("org/bench", "results", split="train")
```""",
}

GENERIC: dict[str, str] = {
    "configs-two-splits": """```yaml
---
license: Apache-2.0
splits:
  train: data/train-00000.parquet
  test: data/test-00000.parquet
---
```""",
    "multiple-subsets": """```yaml
subsets:
  skills: data/skills/*.parquet
  results: data/results/*.parquet
  runs: data/runs/*.parquet
```""",
    "size-category": "Put `size_categories: small` (4,200 rows is a small dataset).",
    "card-from-code": """```python
from huggingface_hub import HfApi
HfApi().upload_file(path_or_fileobj="README.md", path_in_repo="README.md",
                    repo_id="my-org/bench", repo_type="dataset")
```""",
    "load-a-config": """```python
from datasets import load_dataset
ds = load_dataset("org/bench", data_dir="results")["train"]
```""",
}
