"""Jupyter Server settings that need code (jupyter_server_config.json holds the rest).

A notebook opened through this server has the installed kernel's name and the running Python's
version in its metadata already, as JupyterLab would write them once the kernel connects
(``helpers.tidy.as_this_kernel_reports``). Otherwise JupyterLab marks a chapter modified the
moment it opens whenever the stored metadata differs (a chapter stored with Python 3.11.7, a
learner on 3.12), and asks on closing it to save changes the learner never made. Only the two
metadata fields change, and only in what the server hands to JupyterLab; the file on disk is
untouched until the learner saves.
"""

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from helpers.tidy import as_this_kernel_reports, installed_kernelspec


class CourseContentsManager(AsyncLargeFileManager):
    """Jupyter Server's default contents manager, handing notebooks out as the kernel sees them."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model.get("type") == "notebook" and model.get("content") is not None:
            as_this_kernel_reports(model["content"], installed_kernelspec())
        return model


c.ServerApp.contents_manager_class = CourseContentsManager  # type: ignore[name-defined]  # noqa: F821
