"""Small runnable genomics steps used by the README's main job and the tests."""
