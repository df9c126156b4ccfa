"""upskill-hub Space: browse skills, compare their lift per model, run evaluations.

Everything comes from the upskill_hub library (vendored next to this file by
`upskill-hub space deploy`, or listed in requirements.txt by `--no-vendor`); this file
only launches it. Gradio reads
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT; SKILLS_REPO picks the dataset.
"""

from upskill_hub.space.ui import build_app

demo = build_app()

if __name__ == "__main__":
    demo.launch()
